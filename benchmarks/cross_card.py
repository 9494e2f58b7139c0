"""Configs tuned on one card, served on another card of the same target (an H100 bundle on an H200): how fast
card B runs card A's winners against its own. Both results files tune the same keys on their card and keep
every config's time (`tune` does), so B's own timings give the speed of A's winner at each key both tuned:
B's winner time / B's time of A's winner (1.0: the same speed). Pure: reads the files, times nothing.

    python benchmarks/cross_card.py NAME=A.pb.zst NAME=B.pb.zst [NAME=C.pb.zst ...] [--json OUT]

Prints, for each ordered pair (A's winners served on B), the geomean and worst speed over their common keys
and how many winners differ; two runs on one card give the floor: how much a rerun alone moves winners."""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuned_kernels import model
from tuned_kernels.results import read_results

if TYPE_CHECKING:
    from table import Table


def served_speeds(winners_from: model.Results, on: model.Results) -> dict[str, float]:
    """Per key both tuned: `on`'s winner time / `on`'s time of `winners_from`'s winner."""
    theirs = {e.slot: e.best for e in winners_from.entries}
    speeds = {}
    for entry in on.entries:
        best = theirs.get(entry.slot)
        times = {t.config: t.time_ms for t in entry.timings}
        if best is None or best not in times or entry.best not in times:
            continue  # not tuned there, or that config not timed here (rejected on this card)
        speeds[f"{entry.kernel.name.rsplit('.', 1)[-1]} {entry.key}"] = times[entry.best] / times[best]
    return speeds


def summary(speeds: dict[str, float]) -> dict[str, Any]:
    values = list(speeds.values())
    return {
        "keys": len(values),
        "geomean": round(math.exp(sum(map(math.log, values)) / len(values)), 4) if values else None,
        "worst": round(min(values), 4) if values else None,
        "winners_differ": sum(1 for v in values if v != 1.0),
        "per_key": {key: round(v, 4) for key, v in speeds.items()},
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", nargs="+", help="NAME=results file, one per card (or run)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    named = {name: read_results(Path(path)) for name, path in (f.split("=", 1) for f in args.files)}
    report: dict[str, Any] = {
        "environment": {
            "date": min(r.header.created_at for r in named.values())[:10],
            "devices": {name: r.header.target.device_name for name, r in named.items()},
            "triton": sorted({r.header.compiler.triton_version for r in named.values()}),
            "torch": sorted({r.header.compiler.torch_version for r in named.values()}),
        },
        "cross_card": {},
    }
    print(f"{'winners of':>14} {'served on':>10} {'keys':>5} {'geomean':>8} {'worst':>7} {'differ':>7}")
    for a, b in itertools.permutations(named, 2):
        row = summary(served_speeds(named[a], named[b]))
        row["same_card"] = named[a].header.target.device_name == named[b].header.target.device_name
        report["cross_card"][f"{a} on {b}"] = row
        print(
            f"{a:>14} {b:>10} {row['keys']:>5} {row['geomean']:>8} {row['worst']:>7} {row['winners_differ']:>7}"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


def verdicts(report: dict[str, Any], t: Table) -> None:
    """One row per pair of cards: the speed of one card's winners on the other, beside a rerun on one card
    (the spread a rerun alone gives). No goal: it says what serving a bundle made on another card costs."""
    pairs = report.get("cross_card", {})
    reruns = [f"{name} {_fmt(row)}" for name, row in pairs.items() if row["same_card"]]
    for name, row in pairs.items():
        if not row["same_card"] and row["keys"]:
            t.row(
                "cross-card",
                f"winners of {name}, at the {row['keys']} keys both tuned, vs that card's own winners "
                f"(geomean / worst; {row['winners_differ']} winners differ)",
                f"**{_fmt(row)}**; a rerun on one card: {'; '.join(reruns) or 'none'}",
                "none: what it costs",
                None,
            )


def _fmt(row: dict[str, Any]) -> str:
    return f"{row['geomean']:.3f} / {row['worst']:.3f}"


if __name__ == "__main__":
    main(sys.argv[1:])
