"""Everything is in pyproject.toml except one thing setuptools cannot declare there: `tuned_kernels.pth`
at the top of the wheel, which makes TUNED_KERNELS=1 work with no code change."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithPth(build_py):
    def run(self) -> None:
        super().run()
        self.copy_file(
            str(Path(__file__).parent / "tuned_kernels.pth"), str(Path(self.build_lib) / "tuned_kernels.pth")
        )

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / "tuned_kernels.pth")]


setup(cmdclass={"build_py": BuildWithPth})
