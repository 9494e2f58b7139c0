"""Everything is in pyproject.toml except one thing setuptools cannot declare there: `tuned_kernels.pth`
at the top of the wheel, which makes TUNED_KERNELS=1 work with no code change. It goes into the regular
wheel (build_py) and into the editable one that `pip install -e .` builds (editable_wheel), so both kinds
of install turn on the same autoload (pytest-cov ships its own .pth the same way)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH = Path(__file__).parent / "tuned_kernels.pth"


class BuildWithPth(build_py):
    def run(self) -> None:
        super().run()
        self.copy_file(str(PTH), str(Path(self.build_lib) / PTH.name))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / PTH.name)]


class EditableWithPth(editable_wheel):
    # every file in the unpacked folder goes into the editable wheel, beside setuptools' own
    # __editable__ .pth (which sorts first, so the package is importable when ours runs)
    def _run_build_commands(self, dist_name, unpacked_wheel, build_lib, tmp_dir):  # type: ignore[no-untyped-def]
        built = super()._run_build_commands(dist_name, unpacked_wheel, build_lib, tmp_dir)
        shutil.copyfile(PTH, Path(unpacked_wheel) / PTH.name)
        return built


setup(cmdclass={"build_py": BuildWithPth, "editable_wheel": EditableWithPth})
