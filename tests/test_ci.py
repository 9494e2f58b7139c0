"""ci/: the workflows pass actionlint, their steps run locally end to end, compiler bumps are found; and
the pytest plugin loads and dumps persisted tuning, also under pytest-xdist."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tuned_kernels.packager.releases import newer_releases

from tests import factories
from tuned_kernels.results import read_results, write_results

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / "ci/workflows").glob("*.yml"))

SUITE = """
import torch, triton, triton.language as tl

@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (16, 64)], key=["n"])
@triton.jit
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

def run(n):
    x, y = torch.zeros(n), torch.empty(n)
    add_one[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    assert bool((y == 1).all())
"""


def test_every_workflow_passes_actionlint() -> None:
    actionlint = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which(
        "actionlint"
    )
    if actionlint is None:
        pytest.skip("actionlint is installed by the dev extras on Linux x86-64 only")
    assert WORKFLOWS, "no workflows in ci/workflows"
    run = subprocess.run([actionlint, *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def test_workflows_call_only_tuned_kernels_commands_that_exist() -> None:
    from tuned_kernels.cli import build_parser

    commands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    used = {
        line.split("tuned-kernels ", 1)[1].split()[0]
        for wf in WORKFLOWS
        for line in wf.read_text().splitlines()
        if "tuned-kernels " in line and "pip" not in line and not line.lstrip().startswith(("#", "name:"))
    }
    assert used and used <= commands, used - commands


def test_the_local_ci_script_builds_a_cpu_bundle_end_to_end(tmp_path: Path) -> None:
    """Signed, as the workflow signs it when the repository has a BUNDLE_SIGNING_KEY secret."""
    tk = [sys.executable, "-m", "tuned_kernels"]
    subprocess.run([*tk, "keygen", "-o", str(tmp_path / "publisher.key")], check=True, timeout=120)
    env = {**os.environ, "PYTHON": sys.executable, "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay"),
           "BUNDLE_SIGNING_KEY": (tmp_path / "publisher.key").read_text()}  # fmt: skip
    run = subprocess.run(
        ["bash", str(ROOT / "ci/local_build.sh"), str(tmp_path / "out")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    merged = read_results(tmp_path / "out/cpu.pb.zst")
    from tuned_kernels.aot.kernels.builtin import CORPUS

    from tuned_kernels.triton_edge.keys import kernel_identity

    launched = [f for f in CORPUS if f.name != "matmul_tma"]  # no copy engine on the cpu target
    assert {e.kernel.name for e in merged.entries} == {kernel_identity(f.kernel).name for f in launched}
    assert [p.name for p in (tmp_path / "out/dist").iterdir()] == ["tuned_kernels_cpu-0.1.0-py3-none-any.whl"]
    assert (tmp_path / "out/simple/tuned-kernels-cpu/index.html").exists()
    (wheel,) = (tmp_path / "out/dist").iterdir()
    verify = [*tk, "verify", "--key", str(tmp_path / "publisher.key.pub"), str(wheel)]
    assert subprocess.run(verify, capture_output=True, text=True, timeout=120).returncode == 0
    assert not (tmp_path / "out/bundle-signing.key").exists()  # the private key is not left behind


def test_detect_fails_loudly_on_a_runner_without_the_labelled_gpu() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tuned_kernels", "detect", "--expect", "sm90"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1 and "expected sm90, this machine is cpu" in run.stderr


def test_compiler_bump_finds_releases_newer_than_every_bundle(tmp_path: Path) -> None:
    assert newer_releases(["3.5.1", "3.6.0"], ["3.5.0", "3.6.0", "3.6.1", "3.7.0rc1", "3.7.0"]) == [
        "3.6.1",
        "3.7.0",
    ]
    assert newer_releases(["3.6.0"], ["3.7.0rc1"], include_pre=True) == ["3.7.0rc1"]
    write_results(tmp_path / "b/bundle.pb.zst", factories.results(factories.entry()))  # made with 3.9.0
    releases = tmp_path / "triton.json"
    releases.write_text(json.dumps({"releases": {"3.8.0": [{}], "3.9.0": [{}], "3.9.1": [{}], "4.0.0": []}}))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "tuned_kernels",
            "newer-compilers",
            str(tmp_path / "b"),
            "--releases",
            str(releases),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0 and json.loads(run.stdout) == ["3.9.1"], run.stderr  # 4.0.0 has no files yet


def _pytest(suite: Path, *args: str, overlay: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TUNED_KERNELS_CACHE_DIR": str(overlay), "PYTHONPATH": str(suite)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite), *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=suite,
        timeout=300,
    )


def test_pytest_plugin_dumps_across_xdist_workers_then_loads_with_no_misses(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "kernels_under_test.py").write_text(SUITE)
    (suite / "test_small.py").write_text("from kernels_under_test import run\ndef test_small(): run(100)\n")
    (suite / "test_large.py").write_text("from kernels_under_test import run\ndef test_large(): run(300)\n")
    dump = tmp_path / "tuning.pb.zst"

    first = _pytest(
        suite, "-n", "2", "--dist", "loadfile", "--tuned-kernels-dump", str(dump), overlay=tmp_path / "o1"
    )
    assert first.returncode == 0, first.stdout + first.stderr
    assert sorted(e.key[0] for e in read_results(dump).entries) == [100, 300]  # both workers' keys, one file

    again = _pytest(suite, "--tuned-kernels-load", str(dump), overlay=tmp_path / "o2")
    assert again.returncode == 0 and "tuned-kernels: 2 hits, 0 misses" in again.stdout, again.stdout

    (suite / "test_new.py").write_text("from kernels_under_test import run\ndef test_new(): run(1000)\n")
    grown = _pytest(suite, "--tuned-kernels-load", str(dump), overlay=tmp_path / "o3")
    said = "tuned-kernels: 2 hits, 1 predicted, 0 misses (predicted: kernels_under_test.add_one x1)"
    assert said in grown.stdout, grown.stdout

    coverage = subprocess.run(
        [
            sys.executable,
            "-m",
            "tuned_kernels",
            "coverage",
            str(dump),
            "--",
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(suite),
        ],
        env={**os.environ, "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "o4"), "PYTHONPATH": str(suite)},
        capture_output=True,
        text=True,
        cwd=suite,
        timeout=300,
    )
    said = "coverage: 2 hits, 1 distinct keys predicted, 0 distinct keys missed"
    assert said in coverage.stdout, coverage.stdout + coverage.stderr
    assert "predicted kernels_under_test.add_one (1000, 'torch.float32', 'torch.float32')" in coverage.stdout


def test_the_gpu_script_refuses_a_wheel_that_is_not_this_trees(tmp_path: Path) -> None:
    """ci/gpu_run.sh measures the wheel a call carries: one built before the last edit is named and stopped."""
    check = factories.script_module(ROOT / "ci" / "wheel_is_current.py")
    installed = tmp_path / "site" / "tuned_kernels"
    for name, source in check.source_modules(ROOT).items():  # as the wheel installs the tree
        (installed / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, installed / name)
    assert check.differences(installed, ROOT) == []
    (installed / "nearest.py").write_text("# an older nearest.py\n")
    (installed / "aot" / "tuner.py").unlink()
    assert check.differences(installed, ROOT) == ["aot/tuner.py (not in the wheel)", "nearest.py"]
