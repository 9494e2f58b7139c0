"""Tuning progress: a bar rewritten in place on a terminal (keys done, configs of this key, ETA, kernel, key,
best so far), one plain line per finished key otherwise (CI logs). The ETA comes from the measured rate."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True)
class ProgressEvent:
    """Where a tune stands: item `index` of `total` (1-based), its configs measured so far, the best yet."""

    index: int
    total: int
    family: str
    case: str
    configs_done: int
    configs_total: int
    best: str | None  # the best config so far, described
    best_ms: float | None
    elapsed_s: float
    summary: str | None = None  # set once the item is finished (tuned, skipped or failed)

    @property
    def items_finished(self) -> float:
        """Items finished, counting the measured fraction of the current one."""
        if self.summary is not None:
            return float(self.index)
        return self.index - 1 + (self.configs_done / self.configs_total if self.configs_total else 0.0)


class Eta:
    """Time left, from the measured rate: seconds per config since the first config was measured (the first
    also pays for start-up: imports, the first compiles), times the configs left, the keys not yet started
    counted at the mean configs per key so far."""

    def __init__(self) -> None:
        self.started: tuple[float, int] | None = None  # (elapsed, configs measured) at the first measurement
        self.finished_configs = 0  # configs measured for finished keys
        self.keys_seen: dict[int, int] = {}  # item index -> its configs

    def __call__(self, event: ProgressEvent) -> float | None:
        done = self.finished_configs + event.configs_done
        self.keys_seen[event.index] = event.configs_total
        if event.summary is not None:
            self.finished_configs += event.configs_done
        if self.started is None and done > 0:
            self.started = (event.elapsed_s, done)
        if event.summary is not None and event.index == event.total:
            return 0.0
        if self.started is None or done <= self.started[1]:
            return None
        rate = (event.elapsed_s - self.started[0]) / (done - self.started[1])
        per_key = sum(self.keys_seen.values()) / len(self.keys_seen)
        this_key = 0 if event.summary is not None else event.configs_total - event.configs_done
        return rate * (this_key + (event.total - event.index) * per_key)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def bar_line(event: ProgressEvent, width: int, eta_s: float | None) -> str:
    """`3/8 [###-------] 20/76 configs, ETA 1m05s matmul M=16,N=4096,...: best 0.0123 ms` in `width - 1`
    columns: the counts and the ETA always show; the kernel and key are shortened, the best dropped first."""
    cells = 10
    filled = min(cells, int(event.items_finished / max(event.total, 1) * cells))
    head = (
        f"{event.index}/{event.total} [{'#' * filled}{'-' * (cells - filled)}] "
        f"{event.configs_done}/{event.configs_total} configs, ETA {duration(eta_s)}"
    )
    name = f"{event.family} {event.case}"
    best = f": best {event.best_ms:.4g} ms" if event.best_ms is not None else ""
    room = width - 1 - len(head) - 1
    if len(name) + len(best) > room:
        best = ""
    if len(name) > room:
        name = name[: max(room - 1, 0)] + "…" if room > 1 else ""
    return f"{head} {name}{best}".rstrip()[: max(width - 1, 1)]


class Progress:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.shown = 0  # characters of the bar on screen
        self.eta = Eta()

    def __call__(self, event: ProgressEvent) -> None:
        eta_s = self.eta(event)
        if event.summary is not None:
            self._clear()
            self.stream.write(
                f"[{event.index}/{event.total}] {event.family} {event.case}: {event.summary}, "
                f"ETA {duration(eta_s)}\n"
            )
        elif self.tty:
            self._clear()
            line = bar_line(event, shutil.get_terminal_size().columns, eta_s)
            self.stream.write(line)
            self.shown = len(line)
        self.stream.flush()

    def _clear(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * self.shown + "\r")
            self.shown = 0

    def close(self) -> None:
        self._clear()
        self.stream.flush()
