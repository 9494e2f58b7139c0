"""The README's Quick start, as a new user meets it: its program and its commands, copied verbatim from the
README, run in a fresh virtual environment holding only torch, with a copy of this repository beside the
program. Each command must succeed and print what the README shows (sizes and seconds aside)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import factories

ROOT = Path(__file__).resolve().parents[1]
SECTION = re.compile(r"^## Quick start\n(.*?)^## ", re.S | re.M)


def quick_start() -> tuple[str, list[tuple[str, list[str]]]]:
    """The Quick start's program and its (command, output lines) in order."""
    text = SECTION.search((ROOT / "README.md").read_text())
    assert text, "README.md has no Quick start section"
    (console,) = re.findall(r"```console\n(.*?)```", text.group(1), re.S)
    (program,) = re.findall(r"```python\n(.*?)```", text.group(1), re.S)
    steps: list[tuple[str, list[str]]] = []
    for line in console.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return program, steps


def _normal(text: str) -> str:
    """Output without what changes from run to run: sizes and seconds."""
    return re.sub(r"\(\d+ bytes\)", "(N bytes)", re.sub(r"in \d+\.\d s", "in N s", text))


@pytest.mark.slow
def test_the_readme_quick_start_works_verbatim_in_a_fresh_environment(tmp_path: Path) -> None:
    program, steps = quick_start()
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text(program)
    ignore = shutil.ignore_patterns(
        ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".whl"
    )
    shutil.copytree(ROOT, project / "tuned-kernels", ignore=ignore)
    bin_folder = factories.environment_with_torch(tmp_path / "venv")  # "an environment that has PyTorch"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("TUNED_KERNELS", "TRITON_", "VIRTUAL_ENV"))
    }
    env.update(
        PATH=f"{bin_folder}{os.pathsep}{env['PATH']}",
        TUNED_KERNELS_CACHE_DIR=str(tmp_path / "cache"),
        PIP_NO_COMPILE="1",  # modules compile as they are imported
    )
    for command, shown in steps:
        out = subprocess.run(
            ["bash", "-c", command], cwd=project, env=env, capture_output=True, text=True, timeout=900
        )
        assert out.returncode == 0, f"$ {command}\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
        printed = _normal(out.stdout + out.stderr)
        for line in shown:
            assert _normal(line) in printed, (
                f"$ {command}: README shows {line!r}, it printed:\n{printed[-2000:]}"
            )


TROUBLESHOOTING = re.compile(r"^## Troubleshooting\n(.*?)^## ", re.S | re.M)


def _run_here(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`command` in this environment (its tuned-kernels, its torch), with none of the caller's settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUNED_KERNELS", "TRITON_"))}
    env |= {
        "TUNED_KERNELS_CACHE_DIR": str(cwd / "cache"),
        "PATH": f"{Path(sys.executable).parent}:{env['PATH']}",
    }
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_troubleshooting_fixes_for_no_gpu_driver_run_the_quick_start_program(tmp_path: Path) -> None:
    """Each fix the README gives for `0 active drivers`, on the Quick start's own program; and the one it
    says is not enough is not."""
    program, _ = quick_start()
    (tmp_path / "app.py").write_text(program)
    (tmp_path / "app_enabled.py").write_text("import tuned_kernels\ntuned_kernels.enable()\n" + program)
    for fix in ("TUNED_KERNELS=1 python app.py", "python app_enabled.py"):
        out = _run_here(fix, tmp_path)
        assert out.returncode == 0 and out.stdout.strip() == "ok", f"$ {fix}\n{out.stderr[-2000:]}"
    alone = _run_here("TRITON_INTERPRET=1 python app.py", tmp_path)
    assert alone.returncode != 0 and "0 active drivers" in alone.stderr


def test_the_troubleshooting_settings_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    section = TROUBLESHOOTING.search((ROOT / "README.md").read_text())
    assert section is not None
    (console,) = [c for c in re.findall(r"```console\n(.*?)```", section.group(1), re.S) if "doctor" in c]
    command, *shown = [line.strip() for line in console.splitlines() if line.strip()]
    out = _run_here(command.removeprefix("$ "), tmp_path)
    assert [" ".join(line.split()) for line in out.stdout.splitlines()] == [
        " ".join(s.split()) for s in shown
    ]
