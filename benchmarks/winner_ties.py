"""Whether another tie rule would make multi-GPU runs keep the 1-GPU run's winners: the speed-up step's files
(benchmarks/run.py --steps speedup) keep every config's time at every key, so the rule `search.winner`
applies (of the configs within `tie` of the fastest, the first of the kernel's own list) can be applied
again offline with other ties, to both runs' times. Per multi-GPU run and tie: the keys whose winner is
the 1-GPU run's, and what the rule costs (the kept config's time over the fastest measured, geomean and
worst over both runs' keys). Pure: reads the files, times nothing.

    python benchmarks/winner_ties.py results-4xh200-…-speedup.json [...]
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TIES = (0.0, 0.005, 0.01, 0.015, 0.02, 0.03)


def kernel_order(kernel: str) -> list[str]:
    """The kernel's configs as `tune` describes them, in the kernel's own order."""
    from tuned_kernels.triton_edge.keys import config_from_triton

    module, name = kernel.rsplit(".", 1)
    return [config_from_triton(c).describe() for c in getattr(importlib.import_module(module), name).configs]


def kept(timings: dict[str, float], order: Sequence[str], tie: float) -> str:
    """`search.winner`'s rule on described configs."""
    bound = min(timings.values()) * (1 + tie)
    ranked = [c for c in order if c in timings] + [c for c in timings if c not in order]
    return next(c for c in ranked if timings[c] <= bound)


def sweep(rows: dict[str, Any]) -> list[dict[str, Any]]:
    one = next(row for row in rows.values() if row["gpus"] == 1)
    orders: dict[str, list[str]] = {}
    out = []
    for label, row in rows.items():
        if row["gpus"] == 1:
            continue
        for tie in TIES:
            same, costs = 0, []
            for key, base in one["winners"].items():
                if key not in row["winners"]:  # a key the run left unfinished: not the same
                    continue
                kernel = key.split(" ", 1)[0]
                order = orders.setdefault(kernel, kernel_order(kernel))
                mine, theirs = base["timings"], row["winners"][key]["timings"]
                same += kept(mine, order, tie) == kept(theirs, order, tie)
                costs += [t[kept(t, order, tie)] / min(t.values()) for t in (mine, theirs)]
            geomean = math.exp(sum(map(math.log, costs)) / len(costs))
            out.append({"run": label, "tie": tie, "same": same, "keys": len(one["winners"]),
                        "cost_geomean": geomean, "cost_worst": max(costs)})  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", nargs="+", help="speed-up result files")
    args = parser.parse_args()
    print("| file | run | tie | winners the 1-GPU run's | kept config over the fastest: geomean / worst |")
    print("|---|---|---|---|---|")
    for path in args.files:
        for r in sweep(json.loads(Path(path).read_text())["speedup"]):
            print(f"| {Path(path).name} | {r['run']} | {r['tie']:.1%} | {r['same']} of {r['keys']} "
                  f"({r['same'] / r['keys']:.0%}) | {r['cost_geomean']:.4f} / {r['cost_worst']:.4f} |")  # fmt: skip


if __name__ == "__main__":
    main()
