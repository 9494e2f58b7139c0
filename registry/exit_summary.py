"""What `TUNED_KERNELS_VERBOSE=1` prints when a process ends: a few lines saying what was served, what
missed and why, and what it cost. Pure: formats the registry's `summary()`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_NAMED = 4  # changed kernels named before "and N more"


def exit_summary(summary: Mapping[str, Any]) -> list[str]:
    hits, nearest, misses = summary["hits"], summary["nearest"], summary["misses"]
    reasons = ", ".join(f"{n} {why}" for why, n in sorted(summary["misses_by_reason"].items()))
    served = f"{hits} hits" + (f", {nearest} from the nearest key" if nearest else "")
    lines = [
        f"{served}, {misses} misses{f' ({reasons})' if reasons else ''}; "
        f"{summary['configs_benchmarked']} configs benchmarked in {summary['seconds_tuning']:.1f} s"
    ]
    missed = summary.get("missed_keys", [])
    if missed:
        named = "; ".join(f"{name} ({', '.join(key)})" for name, key in missed[:MAX_NAMED])
        more = f" and {misses - MAX_NAMED} more" if misses > MAX_NAMED else ""
        overlay = summary["overlay"]["path"]
        lines.append(
            f"missed: {named}{more}; tuned here and kept in {overlay} (every environment of this user)"
        )
    changed = summary["changed_kernels"]
    if changed:
        named = ", ".join(sorted(changed)[:MAX_NAMED])
        more = f" and {len(changed) - MAX_NAMED} more" if len(changed) > MAX_NAMED else ""
        lines.append(f"changed since they were tuned: {named}{more}")
    aside = summary.get("stepped_aside", {})
    if aside:
        named = ", ".join(f"{kernel} ({why})" for kernel, why in sorted(aside.items())[:MAX_NAMED])
        more = f" and {len(aside) - MAX_NAMED} more" if len(aside) > MAX_NAMED else ""
        lines.append(f"not asked about: {named}{more}")
    compiled = summary["compiled_kernels"]
    bundles = ", ".join(b["bundle"] for b in summary["selected"]) or "none"
    kernels = (
        f"compiled kernels: {compiled['served']} served from bundles, {compiled['compiled_here']} compiled here"
        f"{_named(compiled.get('compiled_here_names', []), compiled['compiled_here'])}"
        if compiled["compiled_here"] is not None
        else "no compiled kernels in the selected bundles"
    )
    lines.append(f"bundles: {bundles}; {kernels}")
    if summary.get("fallbacks"):
        from tuned_kernels.fallbacks import described

        lines.append(f"fell back: {described(summary['fallbacks'])}")
    graphs = summary.get("graphs", {})
    if graphs.get("files_placed") or graphs.get("files_present") or graphs.get("fxgraph_misses"):
        lines.append(
            f"torch.compile graphs: {graphs.get('fxgraph_hits', 0)} found in Inductor's cache, "
            f"{graphs.get('fxgraph_misses', 0)} compiled here; bundle files placed there: "
            f"{graphs['files_placed']} (and {graphs['files_present']} already there)"
        )
    return [f"tuned-kernels: {line}" for line in lines]


def _named(names: list[str], count: int) -> str:
    """ " (a, b and 3 more)" for the first of `count` kernels compiled here, "" for none."""
    if not names:
        return ""
    shown = sorted(set(names))[:MAX_NAMED]
    more = count - len(shown)
    return f" ({', '.join(shown)}{f' and {more} more' if more > 0 else ''})"
