"""The `hot` step: per-launch time of a tiny autotuned kernel with tuned-kernels on and off; its verdicts."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from bench import Bench

if TYPE_CHECKING:
    from table import Table


def run(bench: Bench, repeats: int) -> None:
    runs: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(repeats + 2):  # alternating, so drift affects both alike
        runs["off"].append(bench.child("hot-path", [], bench.env())["us_per_launch"])
        runs["on"].append(bench.child("hot-path", [], bench.env(TUNED_KERNELS="1"))["us_per_launch"])
    interleaved = [bench.child("hot-path-interleaved", [], bench.env()) for _ in range(repeats)]
    bench.report["hot"] = {**runs, "interleaved": interleaved}


def verdicts(r: dict[str, Any], t: Table) -> None:
    if "hot" in r:
        off, on = statistics.median(r["hot"]["off"]), statistics.median(r["hot"]["on"])
        t.row(
            "hot",
            "per-launch time, tiny autotuned kernel",
            f"{on:.2f} vs {off:.2f} µs = {on / off:.3f}x",
            "≤ 1.02x",
            on / off <= 1.02,
        )
        if "interleaved" in r["hot"]:
            ratios = [x["on"] / x["off"] for x in r["hot"]["interleaved"]]
            t.row(
                "hot",
                "the same, on vs off in one process (alternating blocks; per process)",
                ", ".join(f"{v:.3f}x" for v in ratios),
                "≤ 1.02x",
                statistics.median(ratios) <= 1.02,
            )
