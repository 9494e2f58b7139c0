"""Whether the installed tuned_kernels (from the wheel a GPU call carries in .whl/) is this source tree's:
every module the same bytes, none missing on either side. A wheel built before the last edit would measure
code that is not the tree's, so ci/gpu_run.sh stops at once on a mismatch.

  python ci/wheel_is_current.py INSTALLED_PACKAGE_DIR SOURCE_TREE"""

from __future__ import annotations

import sys
from pathlib import Path

SUBPACKAGES = ("aot", "hardware", "packager", "registry")  # top-level folders installed as tuned_kernels.X


def source_modules(tree: Path) -> dict[str, Path]:
    """The package's modules in the source tree, by their path inside the installed package."""
    modules = {
        p.relative_to(tree / "tuned_kernels").as_posix(): p for p in (tree / "tuned_kernels").rglob("*.py")
    }
    for sub in SUBPACKAGES:
        modules |= {f"{sub}/{p.relative_to(tree / sub).as_posix()}": p for p in (tree / sub).rglob("*.py")}
    return modules


def differences(installed: Path, tree: Path) -> list[str]:
    """The modules that differ, or are only on one side, named by their path inside the package."""
    source = source_modules(tree)
    wheel = {p.relative_to(installed).as_posix(): p for p in installed.rglob("*.py")}
    changed = [
        name for name in source.keys() & wheel.keys() if source[name].read_bytes() != wheel[name].read_bytes()
    ]
    only = [f"{name} (not in the wheel)" for name in source.keys() - wheel.keys()]
    only += [f"{name} (not in the tree)" for name in wheel.keys() - source.keys()]
    return sorted(changed + only)


def main() -> int:
    installed, tree = Path(sys.argv[1]), Path(sys.argv[2])
    stale = differences(installed, tree)
    if stale:
        shown = ", ".join(stale[:5]) + (f" and {len(stale) - 5} more" if len(stale) > 5 else "")
        print(f"STALE WHEEL: the tuned_kernels wheel in .whl/ is not this tree's ({shown}); run "
              "`make wheel && cp dist/tuned_kernels-*.whl .whl/` before the call")  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
