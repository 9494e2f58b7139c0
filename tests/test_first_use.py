"""A user's own program on a machine without a GPU: every way of turning tuned-kernels on (`TUNED_KERNELS=1`,
`enable()`, `tuned_kernels.ops`, the pytest plugin) follows one rule, the one `capture` follows: kernels
defined from then on run through Triton's interpreter, and an autotuned kernel defined before the switch is
moved onto it when it first launches. An editable install turns on the same autoload as a wheel. Real processes, with
TRITON_INTERPRET unset, as a user starts them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests import forked_python

ROOT = Path(__file__).resolve().parents[1]
APP = (ROOT / "tests/corpora/previous_release/app.py").read_text()  # an autotuned kernel of the user's
STATS = "import json, tuned_kernels; print(json.dumps(tuned_kernels.stats()))"

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("TUNED_KERNELS_GPU_TESTS")), reason="the no-GPU rule: a machine without a GPU"
)

ENTRY_POINTS = {
    "TUNED_KERNELS=1": ({"TUNED_KERNELS": "1"}, "import app\napp.check(100)\n" + STATS),
    "enable()": ({}, "import tuned_kernels\ntuned_kernels.enable()\nimport app\napp.check(100)\n" + STATS),
    "tuned_kernels.ops": (
        {},
        "import torch\nfrom tuned_kernels import ops\nimport app\napp.check(100)\n"
        "x = torch.randn(4, 100)\nassert torch.allclose(ops.softmax(x), torch.softmax(x, -1), atol=1e-6)\n"
        "print('{}')",
    ),
}


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """A user's process: no TRITON_INTERPRET, no target override, no bundles but theirs."""
    full = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TUNED_KERNELS_TARGET")}
    full.pop("TUNED_KERNELS_PATH", None)
    full.update(TUNED_KERNELS_CACHE_DIR=str(cwd / "overlay"), PYTHONPATH=str(cwd), **env)
    return forked_python.run(args, cwd=cwd, env=full, capture_output=True, text=True, timeout=240)


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_without_a_gpu_each_entry_point_runs_the_users_kernels_on_the_interpreter(
    entry: str, tmp_path: Path
) -> None:
    env, program = ENTRY_POINTS[entry]
    (tmp_path / "app.py").write_text(
        APP + "\n\ndef check(n):\n    y, x = run(n)\n    assert torch.equal(y, 2 * x)\n"
    )
    out = _run([sys.executable, "-c", program], tmp_path, **env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "active drivers" not in out.stderr
    stats = json.loads(out.stdout.splitlines()[-1])
    if entry != "tuned_kernels.ops":  # serving on: the kernel's one key was tuned here
        assert (stats["target"], stats["misses"]) == ("cpu", 1)


def test_without_a_gpu_the_pytest_plugin_runs_and_dumps_the_suites_kernels(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text("import app  # a kernel defined as conftests load\n")
    (tmp_path / "tests" / "test_app.py").write_text(
        "import torch, app\n\ndef test_scale():\n    y, x = app.run(100)\n    assert torch.equal(y, 2 * x)\n"
    )
    out = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tuned-kernels-dump",
                "app.pb", "tests"], tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stdout[-2000:]
    assert "1 passed" in out.stdout
    assert "1 decisions -> app.pb" in out.stdout


def test_a_kernel_defined_before_enable_without_a_gpu_runs_on_the_interpreter_all_the_same(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text(APP)
    program = "import torch, app, tuned_kernels\ntuned_kernels.enable()\ny, x = app.run(100)\n"
    program += "assert torch.equal(y, 2 * x)\nprint(tuned_kernels.stats()['misses'])"
    out = _run([sys.executable, "-c", program], tmp_path)
    assert (out.returncode, out.stdout, out.stderr) == (0, "1\n", ""), out.stderr[-2000:]


def _venv_seeing_this_ones_packages(venv: Path) -> Path:
    """A fresh venv (no pip, no setuptools of its own) whose interpreter also imports this environment's
    packages (torch, triton, pip, setuptools): a path line, which Python adds without reading that folder's
    .pth files, so this environment's own tuned-kernels install stays off."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = forked_python.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True, timeout=60).stdout.strip()  # fmt: skip
    (Path(purelib) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.mark.slow
def test_an_editable_install_turns_on_tuned_kernels_with_TUNED_KERNELS_1(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    shutil.copytree(ROOT, clone, ignore=shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info",
                                                               "__pycache__", ".*_cache", "*.whl"))  # fmt: skip
    python = _venv_seeing_this_ones_packages(tmp_path / "venv")
    install = [
        str(python),
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "-e",
        str(clone),
    ]
    subprocess.run(install, check=True, timeout=300, capture_output=True)
    probe = "import triton, tuned_kernels, tuned_kernels.registry as r; print(tuned_kernels.__file__, r.is_enabled())"
    on = _run([str(python), "-c", probe], tmp_path, TUNED_KERNELS="1")
    off = _run([str(python), "-c", probe], tmp_path)
    assert on.returncode == 0, on.stderr[-2000:]
    assert on.stdout.split() == [str(clone / "tuned_kernels" / "__init__.py"), "True"]
    assert off.stdout.split()[-1] == "False"


def test_strict_stops_on_a_key_no_bundle_holds_in_one_line_and_serves_what_a_bundle_holds(
    tmp_path: Path,
) -> None:
    """TUNED_KERNELS_STRICT=1, for a CI job proving a bundle covers a program: a miss stops the program
    before anything is tuned (exit 3, one line naming the kernel and key), a key this machine's overlay holds
    too (no bundle: it proves nothing); a key a bundle holds runs."""
    (tmp_path / "app.py").write_text(
        APP + "\n\ndef check(n):\n    y, x = run(n)\n    assert torch.equal(y, 2 * x)\n"
    )
    program = "import app\napp.check(100)\nprint('done')"
    stopped = _run([sys.executable, "-c", program], tmp_path, TUNED_KERNELS="1", TUNED_KERNELS_STRICT="1")
    assert stopped.returncode == 3 and "done" not in stopped.stdout
    (line,) = stopped.stderr.strip().splitlines()
    assert line.startswith("tuned-kernels: TUNED_KERNELS_STRICT=1: app.") and "is not in the bundles" in line
    assert not any((tmp_path / "overlay").glob("*.pb"))  # nothing tuned
    assert _run([sys.executable, "-c", program], tmp_path, TUNED_KERNELS="1").returncode == 0  # tuned, kept
    again = _run([sys.executable, "-c", program], tmp_path, TUNED_KERNELS="1", TUNED_KERNELS_STRICT="1")
    assert again.returncode == 3, again.stderr
    bundle = tmp_path / "app.pb.zst"
    capture = [
        sys.executable,
        "-m",
        "tuned_kernels",
        "capture",
        "-o",
        str(bundle),
        "--",
        sys.executable,
        "-c",
    ]
    assert _run([*capture, program], tmp_path).returncode == 0
    served = _run([sys.executable, "-c", program], tmp_path, TUNED_KERNELS="1", TUNED_KERNELS_STRICT="1",
                  TUNED_KERNELS_PATH=str(bundle))  # fmt: skip
    assert served.returncode == 0 and "done" in served.stdout, served.stderr[-2000:]
