"""Capturing: the kernels a program compiles outside tuning (plain `@triton.jit` kernels, other
specializations of winners, the kernels Inductor generates) go into the capture file, to be served by
Triton's own cache key. They are held in memory and written `BATCH` at a time and at exit: written one by
one, each a rewrite of the file under its lock, they serialised Inductor's parallel compiles.

Except in a process that `multiprocessing` started (Inductor compiles its generated kernels in such
workers): it ends without running atexit, so each kernel it compiles is written at once."""

from __future__ import annotations

import atexit
import multiprocessing
import threading
from collections.abc import Callable
from pathlib import Path

from tuned_kernels.registry.forking import in_every_forked_child

from tuned_kernels import model
from tuned_kernels.decision import compiled_kernel_entry
from tuned_kernels.errors import one_line

BATCH = 64


class CompiledKernelBatch:
    def __init__(self, path: Path, header: model.Header, on_problem: Callable[[str], None]) -> None:
        self.path = path
        self.header = header
        self.on_problem = on_problem
        self._lock = threading.Lock()
        self._entries: list[model.Entry] = []
        self._blobs: dict[str, bytes] = {}
        self._flush_at_exit = False
        in_every_forked_child(self._forget_the_parents)

    def _forget_the_parents(self) -> None:
        """In a forked child: the kernels held are the parent's to write, and its lock may have been held."""
        self._lock = threading.Lock()
        self._entries, self._blobs = [], {}

    def add(self, artifact: model.Artifact, blobs: dict[str, bytes], name: str) -> None:
        with self._lock:
            if not self._flush_at_exit:
                self._flush_at_exit = True
                atexit.register(self.flush)
            self._entries.append(compiled_kernel_entry(name, artifact))
            self._blobs.update(blobs)
            full = len(self._entries) >= BATCH or multiprocessing.parent_process() is not None
        if full:
            self.flush()

    def flush(self) -> None:
        """Writes the kernels held so far into the capture file."""
        with self._lock:
            entries, blobs = self._entries, self._blobs
            self._entries, self._blobs = [], {}
        if not entries:
            return
        from tuned_kernels.results import overlay

        try:
            overlay.add_to_overlay(self.path, self.header, entries, blobs, None)
        except Exception as exc:
            self.on_problem(f"could not keep {len(entries)} compiled kernels: {one_line(str(exc))}")
