"""The `helion` step's verdicts: a program of Helion kernels, first results served from a bundle against
Helion's own search (and its warm local cache). benchmarks/helion_first_call.py measures it and writes
`modes`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from table import Table

GOAL = 1 / 50  # the bundle's first results over Helion's search: at least 50x sooner


def verdicts(r: dict[str, Any], t: Table) -> None:
    modes = r.get("modes", {})
    search, bundle = modes.get("helion"), modes.get("bundle")
    if not search or not bundle:
        return
    ratio = bundle["first_results_s"] / search["first_results_s"]
    own = all(
        bundle["kernels"][name]["config"] == kernel["config"]
        for name, kernel in search["kernels"].items()
        if name in bundle["kernels"]
    )
    steady = max(
        bundle["kernels"][name]["ms"] / kernel["ms"]
        for name, kernel in search["kernels"].items()
        if name in bundle["kernels"]
    )
    warm = modes.get("helion-warm")
    to_warm = (
        f" / {warm['first_results_s']:.2f} s = {bundle['first_results_s'] / warm['first_results_s']:.2f}x"
    )
    configs = "every config Helion's own" if own else "OTHER configs"
    t.row(
        "helion",
        "Helion kernels, first results: bundle vs Helion's own search"
        + (" / its warm local cache" if warm else ""),
        f"{bundle['first_results_s']:.2f} s vs {search['first_results_s']:.1f} s = **{ratio:.4f}x**"
        f"{to_warm if warm else ''}; bundle: {bundle['searches']} searches, {bundle['configs_timed']} configs "
        f"timed, {bundle['compiled']} compiled; {configs}, steady state at most {steady:.3f}x Helion's",
        f"≤ {GOAL}x (50x sooner), 0 timed, Helion's own configs",
        ratio <= GOAL and bundle["configs_timed"] == 0 and own,
    )
