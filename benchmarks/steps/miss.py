"""The `miss` step's verdicts: a key no bundle holds, tuned at run time, against Triton's own autotuning of
that key (fresh processes, empty Triton cache). benchmarks/miss.py measures it and writes `miss`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from table import Table

GOAL = 0.35  # ours over Triton's time, first launch to result
SAME_WINNER_WITHIN = 1.01  # another winner must be within 1 % of Triton's


def verdicts(r: dict[str, Any], t: Table) -> None:
    for name, m in r.get("miss", {}).items():
        theirs, ours = m["triton"], m["ours"]
        ratio = ours["seconds"] / theirs["seconds"]
        ms = m.get("winner_ms") or {}
        same = ours["winner"] == theirs["winner"]
        close = bool(ms) and ms["ours"] <= SAME_WINNER_WITHIN * ms["triton"]
        winner = (
            "the same winner" if same else f"winners {ms['triton']:.4f} vs {ms['ours']:.4f} ms" if ms else "?"
        )
        t.row(
            "miss",
            f"{name}: a missed key, first launch to result, ours vs Triton's autotuning ({theirs['candidates']} "
            "configs)",
            f"{ours['seconds']:.2f} vs {theirs['seconds']:.2f} s = **{ratio:.2f}x**; {winner}",
            f"≤ {GOAL}x, the same winner or within 1 %",
            ratio <= GOAL and (same or close),
        )
