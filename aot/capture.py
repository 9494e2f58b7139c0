"""`tuned-kernels capture -o FILE -- CMD...`: runs a program unchanged and records every autotuning
decision of its `@triton.autotune` kernels (kernel identity, key, config timings, winner) and of
torch.compile's Inductor (GEMM choices; the tuned configs of the kernels it generates; the graphs it
compiled, as its caches hold them) into FILE.

The program's interpreter picks up tuned_kernels.pth, which sees TUNED_KERNELS_CAPTURE and enables a
registry with the capture policy (`registry.settings`): every decision is measured and appended to FILE
under a file lock, so programs that fork workers (pytest-xdist, torchrun) are captured whole. Inductor
gets an empty cache directory of its own, so that it tunes and compiles everything; the tuned configs and
compiled graphs it leaves there are added to FILE when the program ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tuned_kernels import model
from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.results import read_results, write_results
from tuned_kernels.results.formats import format_for
from tuned_kernels.results.overlay import add_to_overlay
from tuned_kernels.timestamps import utc_now


@dataclass(frozen=True)
class CaptureReport:
    returncode: int
    entries: int
    kernels: tuple[str, ...]
    written: bool = True  # whether `output` was (re)written
    graphs: str = ""  # the compiled torch.compile graphs it holds, described ("" for none)
    replaced: int | None = None  # the entries `output` held before, where they were replaced
    kept: int = 0  # the entries `output` held before, kept beside the new ones (merge)


def capture(output: str, command: Sequence[str], merge: bool = False) -> CaptureReport:
    """Runs `command` recording into a working file beside `output`, which then replaces `output` (`merge`:
    is merged with what `output` holds, the faster winner of a key kept). A program that succeeds recording
    nothing leaves a valid empty results file (as `pytest --tuned-kernels-dump` does); one that fails
    recording nothing leaves `output` as it was. A program stopped with Ctrl-C keeps what it recorded."""
    if not command:
        raise TunedKernelsError("give the program to run after --, e.g. -- python app.py")
    format_for(output)  # a bad extension fails before the program runs
    if shutil.which(command[0]) is None:
        raise TunedKernelsError(f"cannot run {command[0]!r}: no such program")
    path = Path(output).resolve()
    if path.is_dir():
        raise TunedKernelsError(f"-o {output} is a directory")
    before = _held(path, merge)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TunedKernelsError(f"-o {output}: cannot make its folder: {exc.strerror or exc}") from None
    work = path.with_name(f".capturing-{os.getpid()}-{path.name}")  # the same extension: the same format
    lock = Path(f"{work}.lock")
    from tuned_kernels.inductor_edge.autotune_cache import CAPTURING_PREFIX

    inductor_cache = Path(tempfile.mkdtemp(prefix=CAPTURING_PREFIX, dir=path.parent))
    env = {**os.environ, "TUNED_KERNELS_CAPTURE": str(work), "TORCHINDUCTOR_CACHE_DIR": str(inductor_cache)}
    try:
        seeded = _warm_start(inductor_cache)
        returncode = _run(command, env)
        _add_inductor_state(work, inductor_cache, seeded)
        if not work.exists():
            if returncode != 0:
                return CaptureReport(returncode, 0, (), written=False)
            write_results(work, model.Results(_header()))
        results = read_results(work)
        if merge and before is not None:
            _merge_into(work, before, results, path)
        os.replace(work, path)
    finally:
        work.unlink(missing_ok=True)
        lock.unlink(missing_ok=True)
        shutil.rmtree(inductor_cache, ignore_errors=True)
    from tuned_kernels.results.report import GRAPH_SIDE, describe_graphs, graph_files

    decisions = [e for e in results.entries if e.kernel.name not in GRAPH_SIDE]
    held = graph_files(results)
    earlier = None if before is None else len(before.entries)
    return CaptureReport(
        returncode,
        len(decisions),
        tuple(sorted({e.kernel.name for e in decisions})),
        graphs=describe_graphs(held) if held else "",
        replaced=None if merge else earlier,
        kept=(earlier or 0) if merge else 0,
    )


def _held(path: Path, merge: bool) -> model.Results | None:
    """What `path` holds before the capture (None: nothing, or an unreadable file to replace). To merge
    with, it must be readable and of this machine's target and compiler: said before the program runs."""
    if not path.exists():
        return None
    try:
        before = read_results(path)
    except TunedKernelsError:
        if merge:
            raise
        return None
    if merge:
        _merged(before, model.Results(_header()))  # a conflict (another target or compiler) fails here
    return before


def _run(command: Sequence[str], env: dict[str, str]) -> int:
    """The program's exit status; Ctrl-C (which the program, in this terminal's process group, gets too)
    waits for it to end (asking it again after 30 s, stopping it after 40) and counts as status 130, so
    what it recorded is kept."""
    child = subprocess.Popen(list(command), env=env)
    try:
        return child.wait()
    except KeyboardInterrupt:
        for ask in (None, signal.SIGINT, signal.SIGKILL):
            if ask is not None:
                child.send_signal(ask)
            with contextlib.suppress(subprocess.TimeoutExpired, KeyboardInterrupt):
                child.wait(timeout=30 if ask is None else 10)
                break
        return 130 if child.returncode in (None, -signal.SIGINT) else child.returncode


def _merge_into(work: Path, before: model.Results, now: model.Results, path: Path) -> None:
    """`work` rewritten as `before` and `now` merged; where they do not merge (the program ran with another
    target or compiler than this process), what it recorded is kept beside `path` and the error names it."""
    try:
        write_results(work, _merged(before, now))
    except TunedKernelsError as exc:
        kept = path.with_name(f"{path.name}.unmerged-{os.getpid()}{''.join(path.suffixes)}")
        os.replace(work, kept)
        raise TunedKernelsError(f"--merge: {exc}; what this run recorded is in {kept}") from None


def _merged(before: model.Results, now: model.Results) -> model.Results:
    from tuned_kernels.results.merge import merge_results
    from tuned_kernels.version import TOOL_VERSION

    inputs = [("the file before", before), ("this capture", now)]
    return merge_results(inputs, created_at=now.header.created_at, tool_version=TOOL_VERSION)


def _warm_start(inductor_cache: Path) -> dict[str, str]:
    """The private cache directory starts with what Inductor tuned in the user's own (warm_start.py)."""
    from tuned_kernels.inductor_edge import autotune_cache, warm_start

    try:
        return warm_start.seed(autotune_cache.inductor_cache_dir(), inductor_cache)
    except Exception:  # an unreadable cache folder, another torch's layout: the capture tunes what it needs
        return {}


def _add_inductor_state(work: Path, inductor_cache: Path, seeded: dict[str, str]) -> None:
    """What Inductor left in its cache directory, into `work`: the configs it tuned (or found tuned) for the
    kernels it generated, and its compiled graphs (with their kernels)."""
    from tuned_kernels.inductor_edge import autotune_cache, graphs, reduction_choices, source_key, warm_start

    header = _header()
    found, blobs = graphs.harvest(inductor_cache, graphs.files_target(header.target.arch))
    tuned = autotune_cache.harvest(inductor_cache, warm_start.used(inductor_cache, seeded))
    choices = reduction_choices.harvest(inductor_cache)
    entries = [*tuned, *choices, *found, *(source_key.harvest(inductor_cache) if found else [])]
    if entries:
        add_to_overlay(work, header, entries, blobs, None)


def _header() -> model.Header:
    from tuned_kernels.aot.tune_command import header_now
    from tuned_kernels.hardware import detect

    return header_now(detect(), model.Producer.CAPTURE, utc_now())
