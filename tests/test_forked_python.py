"""The tests' own harness: a program `capture` starts is forked by the test process's server (it begins with
torch imported) and ends, for capture, as a new interpreter running it would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked_python

ASKED_TORCH = "import sys; print('torch' in sys.modules, end='; ', flush=True)"


def _capture(tmp_path: Path, code: str, forked: bool) -> subprocess.CompletedProcess[str]:
    tmp_path.mkdir()
    command = [sys.executable, "-m", "tuned_kernels", "capture", "-o", str(tmp_path / "out.pb.zst"), "--"]
    command += [sys.executable, "-c", f"{ASKED_TORCH}\n{code}"]
    env = {**os.environ, "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay")}
    run = forked_python.run if forked else subprocess.run
    return run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(
    not forked_python.ENABLED, reason="TESTS_FORKED_PYTHON=0: every program a new interpreter"
)
@pytest.mark.parametrize(
    ("code", "status"),
    [("sys.exit(3)", 3), ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", 241)],
    ids=["exits-3", "ends-by-sigterm"],
)
def test_a_program_capture_starts_is_forked_and_ends_as_a_new_interpreter_running_it_would(
    tmp_path: Path, code: str, status: int
) -> None:
    forked, new = (_capture(tmp_path / kind, code, kind == "forked") for kind in ("forked", "new"))
    assert forked.stdout.startswith("True; ") and new.stdout.startswith("False; ")
    assert forked.returncode == new.returncode == status
    assert forked.stderr.replace("forked", "new") == new.stderr, (forked.stderr, new.stderr)


@pytest.mark.skipif(
    not forked_python.ENABLED, reason="TESTS_FORKED_PYTHON=0: every program a new interpreter"
)
def test_a_forked_program_starts_with_the_preloaded_libraries_and_nothing_tuned_kernels_waits_for() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNED_KERNELS")}
    done = forked_python.run(
        [sys.executable, "-c", "import sys; print(' '.join(sys.modules))"], env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    modules = set(done.stdout.split())
    assert {"torch", *forked_python.PRELOADED} <= modules
    assert forked_python.waited_for(modules) == []
