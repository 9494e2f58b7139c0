"""Tuning progress: a bar rewritten in place on a terminal (kernel, key, configs done, best so far, ETA),
one plain line per finished key otherwise (CI logs)."""

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

    @property
    def eta_s(self) -> float | None:
        """Remaining time, from the pace so far."""
        finished = self.items_finished
        if finished <= 0:
            return None
        return self.elapsed_s / finished * (self.total - finished)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def bar_line(event: ProgressEvent, width: int) -> str:
    """`[#####-----] 3/8 matmul M=16,...: 20/76 configs, best 0.0123 ms (BLOCK_M=...), ETA 1m05s`"""
    cells = 20
    filled = min(cells, int(event.items_finished / max(event.total, 1) * cells))
    best = f"best {event.best_ms:.4g} ms ({event.best})" if event.best_ms is not None else "best -"
    text = (
        f"[{'#' * filled}{'-' * (cells - filled)}] {event.index}/{event.total} {event.family} {event.case}: "
        f"{event.configs_done}/{event.configs_total} configs, ETA {duration(event.eta_s)}, {best}"
    )
    return text[: max(width - 1, 20)]


class Progress:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.shown = 0  # characters of the bar on screen

    def __call__(self, event: ProgressEvent) -> None:
        if event.summary is not None:
            self._clear()
            self.stream.write(
                f"[{event.index}/{event.total}] {event.family} {event.case}: {event.summary}, "
                f"ETA {duration(event.eta_s)}\n"
            )
        elif self.tty:
            self._clear()
            line = bar_line(event, shutil.get_terminal_size().columns)
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
