"""Writes a serving process's tuned configs into the overlay off the thread that missed.

A miss's winner is served from this process's memory at once (`sources.add_local`); the overlay only has to
hold it for the next process. Rewriting the file costs tens of milliseconds (84 ms at the 4,096-entry
bound, BENCHMARKS.md), so the missing thread only queues the entry, and one writer thread per process writes
what has queued since its last write in one update (under the same file lock, by the same atomic replace
as before). What is queued is written at exit, or when `flush` is asked for (`stats()` asks, so its counts
include the writes). A process that `multiprocessing` started ends without running atexit: it writes at
once, on the missing thread, as a forked child also does for what it queues after the fork.
"""

from __future__ import annotations

import atexit
import multiprocessing
import threading
from collections.abc import Callable, Sequence

from tuned_kernels.registry.forking import in_every_forked_child

from tuned_kernels import fallbacks, model
from tuned_kernels.errors import warn

Write = Callable[[Sequence[model.Entry], bool], None]  # entries, supersede
# The longest an exiting process waits for its last write: another process may hold the overlay's lock for
# long (a stopped job), and the program's work is done. What is not written then stays in this process.
EXIT_WAIT_S = 5.0


class OverlayWriter:
    def __init__(self, write: Write) -> None:
        self._write = write
        self._queued: list[tuple[model.Entry, bool]] = []
        self._writing = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        in_every_forked_child(self._forget_the_parents)

    def _forget_the_parents(self) -> None:
        """In a forked child: the entries queued are the parent's to write, and its thread is not here."""
        self._changed = threading.Condition()
        self._queued, self._writing, self._thread = [], False, None

    def submit(self, entry: model.Entry, supersede: bool) -> None:
        """Queues `entry` for the overlay and returns (written at once where no atexit would run)."""
        if multiprocessing.parent_process() is not None:
            self._write([entry], supersede)
            return
        with self._changed:
            self._queued.append((entry, supersede))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tuned-kernels-overlay", daemon=True)
                self._thread.start()
                atexit.register(self._flush_at_exit)
            self._changed.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Waits until everything queued so far is written (False: `timeout` seconds passed first)."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._queued and not self._writing, timeout)

    def _flush_at_exit(self) -> None:
        if not self.flush(EXIT_WAIT_S):
            with self._changed:
                left = len(self._queued) + (1 if self._writing else 0)
            fallbacks.count("overlay_write", left)
            warn(
                f"the overlay is still locked by another process after {EXIT_WAIT_S:.0f} s: what this process "
                "tuned is not kept there (tuned again next time)"
            )

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._queued))
                batch, self._queued, self._writing = self._queued, [], True
            try:
                for supersede, entries in runs_by_flag(batch):
                    try:
                        self._write(entries, supersede)
                    except Exception:  # the write says its own problems; the writer must outlive any one
                        fallbacks.count("overlay_write", len(entries))
            finally:
                with self._changed:
                    self._writing = False
                    self._changed.notify_all()


def runs_by_flag(batch: Sequence[tuple[model.Entry, bool]]) -> list[tuple[bool, list[model.Entry]]]:
    """The batch as consecutive runs of one `supersede` flag, in order (a later entry for a slot must land
    after an earlier one)."""
    runs: list[tuple[bool, list[model.Entry]]] = []
    for entry, supersede in batch:
        if runs and runs[-1][0] == supersede:
            runs[-1][1].append(entry)
        else:
            runs.append((supersede, [entry]))
    return runs
