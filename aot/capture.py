"""`tuned-kernels capture -o FILE -- CMD...`: runs a program unchanged and records every autotuning
decision of its `@triton.autotune` kernels (kernel identity, key, config timings, winner) into FILE.

The program's interpreter picks up tuned_kernels.pth, which sees TUNED_KERNELS_CAPTURE and enables the
registry hook in capture mode: every decision is made by benchmarking and appended to FILE under a file
lock, so programs that fork workers (pytest-xdist, torchrun) are captured whole.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.results import read_results
from tuned_kernels.results.formats import format_for


@dataclass(frozen=True)
class CaptureReport:
    returncode: int
    entries: int
    kernels: tuple[str, ...]


def capture(output: str, command: Sequence[str]) -> CaptureReport:
    if not command:
        raise TunedKernelsError("capture: give the program to run after --, e.g. -- python app.py")
    format_for(output)  # a bad extension fails before the program runs
    path = Path(output).resolve()
    path.unlink(missing_ok=True)
    env = {**os.environ, "TUNED_KERNELS_CAPTURE": str(path)}
    returncode = subprocess.call(list(command), env=env)
    if not path.exists():
        return CaptureReport(returncode, 0, ())
    results = read_results(path)
    return CaptureReport(
        returncode, len(results.entries), tuple(sorted({e.kernel.name for e in results.entries}))
    )
