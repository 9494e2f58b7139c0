"""Packaging: one import namespace, nothing generic at the top of site-packages."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        cwd=out,
        timeout=300,
    )
    (found,) = out.glob("tuned_kernels-*.whl")
    return found


def top_level_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return {name.split("/", 1)[0] for name in zf.namelist()}


def test_wheel_installs_only_our_namespace(wheel: Path) -> None:
    names = top_level_names(wheel)
    dist_info = {n for n in names if n.endswith(".dist-info")}
    assert names - dist_info <= {"tuned_kernels", "tuned_kernels.pth"}, names
    for generic in ("hardware", "registry", "aot", "packager", "tests", "ci"):
        assert generic not in names


def test_wheel_holds_the_four_subpackages_and_the_proto(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        files = set(zf.namelist())
    for sub in ("hardware", "aot", "packager", "registry"):
        assert f"tuned_kernels/{sub}/__init__.py" in files
    assert "tuned_kernels/results/results.proto" in files
    assert "tuned_kernels/results/results_pb2.py" in files


def test_module_entry_point_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tuned_kernels", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert "detect" in out.stdout and "inspect" in out.stdout
