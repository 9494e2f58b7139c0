"""What `TUNED_KERNELS_VERBOSE=1` prints when a process ends: a few lines saying what was served, what
missed and why, and what it cost. Pure: formats the registry's `summary()`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_NAMED = 4  # changed kernels named before "and N more"


def exit_summary(summary: Mapping[str, Any]) -> list[str]:
    hits, nearest, misses = summary["hits"], summary["nearest"], summary["misses"]
    reasons = ", ".join(f"{n} {why}" for why, n in sorted(summary["misses_by_reason"].items()))
    overlay_hits = summary.get("served_from", {}).get(summary["overlay"]["path"], 0)
    served = f"{hits} hits" + (f" ({overlay_hits} from this user's overlay)" if overlay_hits else "")
    served += f", {nearest} from the nearest key" if nearest else ""
    predicted = summary.get("predicted", 0)
    served += f", {predicted} predicted from tuned keys" if predicted else ""
    lines = [
        f"{served}, {misses} misses{f' ({reasons})' if reasons else ''}; "
        f"{summary['configs_benchmarked']} configs benchmarked in {summary['seconds_tuning']:.1f} s"
    ]
    missed = summary.get("missed_keys", [])
    fell_back = dict(summary.get("fallbacks", {}))
    if missed:
        overlay = summary["overlay"]
        if overlay.get("kept", True):
            went = f"kept in {overlay['path']} (every environment of this user)"
        else:  # the one line of why came when it happened
            went = "kept in this process only (the overlay could not be written)"
            fell_back.pop("overlay_write", None)
        lines.append(f"missed: {keys_named(missed, misses)}; tuned here and {went}")
    guessed = summary.get("predicted_keys", [])
    if guessed:
        lines.append(
            f"predicted, not in any bundle: {keys_named(guessed, predicted)}; served untimed (`tuned-kernels "
            "tune-misses -- COMMAND` tunes them)"
        )
    changed = summary["changed_kernels"]
    if changed:
        lines.append(f"changed since they were tuned: {first_named(sorted(changed), len(changed))}")
    aside = summary.get("stepped_aside", {})
    if aside:
        asides = [f"{kernel} ({why})" for kernel, why in sorted(aside.items())]
        lines.append(f"not asked about: {first_named(asides, len(aside))}")
    compiled = summary["compiled_kernels"]
    here = sorted(set(compiled.get("compiled_here_names", [])))
    named_here = f" ({first_named(here, compiled['compiled_here'])})" if here else ""
    bundles = ", ".join(b["bundle"] for b in summary["selected"]) or "none"
    not_used = "; ".join(f"{r['bundle']}: {r['reason']}" for r in summary.get("rejected", []))
    if not_used:
        bundles += f" (not used: {not_used})"
    kernels = (
        f"compiled kernels: {compiled['served']} served from bundles, {compiled['compiled_here']} compiled here"
        f"{named_here}"
        if compiled["compiled_here"] is not None
        else "no compiled kernels in the selected bundles"
    )
    lines.append(f"bundles: {bundles}; {kernels}")
    if fell_back:
        from tuned_kernels.fallbacks import described

        lines.append(f"fell back: {described(fell_back)}")
    graphs = summary.get("graphs", {})
    shown = (
        "files_placed",
        "files_present",
        "files_removed",
        "fxgraph_misses",
        "objects_compiled",
        "frames_served",
    )
    if any(graphs.get(k) for k in shown):
        lines.append(graphs_line(graphs))
    return [f"tuned-kernels: {line}" for line in lines]


def graphs_line(graphs: dict[str, Any]) -> str:
    """The summary's line on torch.compile's graphs: found, compiled here, placed, and what was served."""
    objects = graphs.get("objects_compiled", [])
    served = graphs.get("frames_served", 0)
    return (
        "torch.compile graphs: "
        + (f"{served} loaded with their Dynamo frames (no trace), " if served else "")
        + f"{graphs.get('fxgraph_hits', 0)} found in Inductor's cache, "
        f"{graphs.get('fxgraph_misses', 0)} compiled here"
        + (f", and {len(objects)} C++ objects ({first_named(objects, len(objects))})" if objects else "")
        + f"; bundle files placed there: {graphs['files_placed']} (and {graphs['files_present']} already "
        "there)"
        + (
            f"; taken out, no bundle offers them now: {graphs['files_removed']}"
            if graphs.get("files_removed")
            else ""
        )
        + (
            f"; made on another GPU, moved to this one: {graphs['moved_to_this_gpu']}"
            if graphs.get("moved_to_this_gpu")
            else ""
        )
        + (
            f"; Dynamo frames offered and traced instead: {graphs['frames_traced']} (the first: "
            f"{graphs.get('frames_traced_first_why', '?')})"
            if graphs.get("frames_traced")
            else ""
        )
        + ("; torch's source hash from the bundle" if graphs.get("torch_key_from_bundle") else "")
        + (
            f"; C++ objects found under the capture's install paths: {graphs['objects_from_another_install']}"
            if graphs.get("objects_from_another_install")
            else ""
        )
        + (
            f"; reductions run as captured, untimed: {graphs['reductions_as_captured']}"
            if graphs.get("reductions_as_captured")
            else ""
        )
    )


def keys_named(keys: list[list[Any]], total: int) -> str:
    """ "k (1, 2); k (3, 4) and 5 more": the first MAX_NAMED of the summary's `[name, [key values]]`, of `total`."""
    named = "; ".join(f"{name} ({', '.join(key)})" for name, key in keys[:MAX_NAMED])
    return named + (f" and {total - MAX_NAMED} more" if total > MAX_NAMED else "")


def first_named(names: list[str], total: int) -> str:
    """ "a, b, c, d and 3 more": the first MAX_NAMED of `names`, of `total` in all."""
    more = total - len(names[:MAX_NAMED])
    return ", ".join(names[:MAX_NAMED]) + (f" and {more} more" if more > 0 else "")
