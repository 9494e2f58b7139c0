"""BENCHMARKS.md's table from a report (a run's JSON, or result files merged): one row per measured figure
with its goal and whether it was met. Each step's module holds its verdicts, next to the step that measured
them; this module only orders them."""

from __future__ import annotations

from typing import Any

import cross_card
import inductor_warm
from steps import cold, helion, hot, inductor, load, miss, predict, programs, quality, scaling, tune

HEADER = ["| step | what | measured | goal | met |", "|---|---|---|---|---|"]


class Table:
    def __init__(self) -> None:
        self.lines = list(HEADER)

    def row(self, pid: str, what: str, measured: str, goal: str, met: bool | None) -> None:
        self.lines.append(
            f"| {pid} | {what} | {measured} | {goal} | {'-' if met is None else 'yes' if met else 'NO'} |"
        )


def table(report: dict[str, Any]) -> str:
    t = Table()
    inductor_warm.verdicts(report, t.row)
    inductor_warm.on_another_gpu(report, t.row)
    quality.choices_verdicts(report, t)
    for step in (inductor, programs, cold, hot, quality, tune, load, scaling, miss, helion, predict):
        step.verdicts(report, t)
    cross_card.verdicts(report, t)
    return "\n".join(t.lines)
