"""Where a measured miss goes: the per-user overlay when serving (bounded, read back by later processes),
the `-o` file when capturing (every decision, with the winner's compiled kernel and the kernels the program
compiles outside tuning). A sink that cannot write (read-only or full disk, a lock that times out) says so
once and keeps what was tuned in this process only."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from tuned_kernels.registry.compiled_batch import CompiledKernelBatch
from tuned_kernels.registry.overlay_writer import OverlayWriter

from tuned_kernels import fallbacks, model
from tuned_kernels.errors import one_line
from tuned_kernels.inductor_edge import keys as inductor_keys
from tuned_kernels.resolving import Compiled


class Sink(Protocol):
    path: Path | None

    def keep(
        self, entry: model.Entry, compiled: Callable[[model.Config], Compiled] | None, supersede: bool
    ) -> None:
        """Writes `entry` (`supersede`: replacing what the file holds for its slot, even if faster)."""
        ...

    def flush(self) -> None:
        """Writes what is held so far."""
        ...


class _ResultsFile:
    """Entries added to one results file under its lock. A failed write is said once; after it, the
    overlay is left alone (`retry=False`), a capture file is tried again (every entry matters there)."""

    def __init__(
        self, path: Path | None, header: model.Header, on_problem: Callable[[str], None], retry: bool
    ) -> None:
        self.path = path
        self.header = header
        self.on_problem = on_problem
        self.retry = retry
        self.failed = False

    def add(
        self, entries: Sequence[model.Entry], blobs: dict[str, bytes], limit: int | None, supersede: bool
    ) -> None:
        if self.path is None or (self.failed and not self.retry):
            if self.failed:
                fallbacks.count("overlay_write", len(entries))
            return
        from tuned_kernels.results import overlay

        try:
            overlay.add_to_overlay(self.path, self.header, entries, blobs, limit, supersede=supersede)
        except Exception as exc:  # read-only or full disk, lock time-out: keep running, say so once
            fallbacks.count("overlay_write", len(entries))
            if not self.failed:
                self.failed = True
                self.on_problem(
                    f"cannot write {self.path}: {one_line(str(exc))}; tuned configs stay in this process"
                )


class OverlaySink:
    """Serving: the overlay, at most `overlay.MAX_ENTRIES` entries (None: no usable overlay), written off
    the missing thread (overlay_writer.py)."""

    def __init__(self, path: Path | None, header: model.Header, on_problem: Callable[[str], None]) -> None:
        from tuned_kernels.results.overlay import MAX_ENTRIES

        self.path = path
        results_file = _ResultsFile(path, header, on_problem, retry=False)
        self._writer = OverlayWriter(
            lambda entries, supersede: results_file.add(entries, {}, MAX_ENTRIES, supersede)
        )

    def keep(
        self, entry: model.Entry, compiled: Callable[[model.Config], Compiled] | None, supersede: bool
    ) -> None:
        self._writer.submit(entry, supersede)

    def flush(self) -> None:
        """Waits until the configs tuned so far are in the overlay (or have failed to get there)."""
        self._writer.flush()


class CaptureSink:
    """Capturing: the `-o` file, unbounded; each winner goes with its compiled kernel, and the kernels the
    program compiles outside tuning are batched into it (compiled_batch.py)."""

    def __init__(self, path: Path, header: model.Header, on_problem: Callable[[str], None]) -> None:
        self.path: Path | None = path
        self.on_problem = on_problem
        self._file = _ResultsFile(path, header, on_problem, retry=True)
        self.batch = CompiledKernelBatch(path, header, on_problem)

    def keep(
        self, entry: model.Entry, compiled: Callable[[model.Config], Compiled] | None, supersede: bool
    ) -> None:
        artifacts, blobs = self._compiled(entry.best, compiled)
        captured = dataclasses.replace(entry, found_by=model.FoundBy.CAPTURED, artifacts=artifacts)
        self._file.add([captured], blobs, None, supersede)

    def keep_compiled(self, artifact: model.Artifact, blobs: dict[str, bytes], name: str) -> None:
        """Triton's cache manager tells of each kernel compiled outside tuning; all are kept but those
        Inductor compiles only to time them (hundreds, never compiled again when served)."""
        if not inductor_keys.compiled_only_to_time(name):
            self.batch.add(artifact, blobs, name)

    def flush(self) -> None:
        """Writes the compiled kernels held so far (at exit otherwise)."""
        self.batch.flush()

    def _compiled(
        self, config: model.Config, compiled: Callable[[model.Config], Compiled] | None
    ) -> Compiled:
        """On a GPU, the winner's compiled kernel (compiled while benchmarking) goes along."""
        if compiled is None:
            return (), {}
        try:
            return compiled(config)
        except Exception as exc:
            self.on_problem(
                f"could not keep the compiled kernel of {config.describe()}: {type(exc).__name__}: {exc}"
            )
            return (), {}
