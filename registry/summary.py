"""What a registry found, selected, rejected and did, as one dictionary (`tuned-kernels status`, doctor,
`TUNED_KERNELS_VERBOSE=1`), and the line a process appends for `tuned-kernels coverage`."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from tuned_kernels.registry.exit_summary import exit_summary
from tuned_kernels.registry.loading import Loaded
from tuned_kernels.registry.stats import Stats

from tuned_kernels import fallbacks
from tuned_kernels.triton_edge import host_modules

MAX_KEYS_LISTED = 16


def summary(
    loaded: Loaded,
    stats: Stats,
    changed_kernels: dict[str, str],
    built: host_modules.BuildReport | None,
    problems: list[str],
) -> dict[str, Any]:
    path, selection, sources, store = loaded.overlay_path, loaded.selection, loaded.sources, loaded.store
    size = 0
    with contextlib.suppress(OSError):  # a folder name too long for the file system: nothing there
        size = path.stat().st_size if path is not None and path.is_file() else 0
    return {
        "target": loaded.target.arch if loaded.target else None,
        "compiler": loaded.compiler.describe() if loaded.compiler else None,
        "bundles_found": len(selection.selected) + len(selection.rejected),
        "selected": [{"bundle": c.name, "file": c.path} for c in selection.selected],
        "rejected": [
            {"bundle": r.candidate.name, "file": r.candidate.path, "reason": r.reason}
            for r in selection.rejected
        ],
        "entries": len(sources),
        "bundle_entries": {view.path: len(view) for view in sources.bundles},
        "overlay": {
            "path": str(path),
            "bytes": size,
            "entries_per_kernel": sources.local_counts(),
            # where this process's tuned misses went: the overlay, or nowhere but this process
            "kept": loaded.sink is not None
            and loaded.sink.path is not None
            and not fallbacks.counts().get("overlay_write"),
        },
        "served_from": dict(stats.served_from),
        "hits": stats.hits,
        "nearest": stats.nearest,
        "predicted": stats.predicted,
        "misses": stats.misses,
        "configs_benchmarked": stats.configs_benchmarked,
        "compiled_kernels": {
            "held": len(store),
            "served": store.served,
            "failed": store.failed,
            "compiled_here": store.compiled_here if len(store) else None,
            "compiled_here_names": store.compiled_here_names if len(store) else [],
        },
        "graphs": graph_summary(stats),
        "fallbacks": fallbacks.counts(),
        "host_modules_built_ahead": dataclasses.asdict(built) if built else None,
        "missed_kernels": dict(stats.missed_kernels),
        "missed_keys": [[name, [str(v) for v in key]] for name, key in stats.missed_keys[:MAX_KEYS_LISTED]],
        "predicted_keys": [
            [name, [str(v) for v in key]] for name, key in stats.predicted_keys[:MAX_KEYS_LISTED]
        ],
        "misses_by_reason": dict(stats.misses_by_reason),
        "changed_kernels": dict(changed_kernels),
        "stepped_aside": dict(stats.stepped_aside),
        "seconds_tuning": round(stats.seconds_tuning, 3),
        "problems": list(problems),
    }


def graph_summary(stats: Stats) -> dict[str, Any]:
    """torch.compile's graphs in this process: the bundles' files placed in Inductor's cache directory, and
    Inductor's own counts of graphs found in its caches and compiled."""
    from tuned_kernels.inductor_edge import cpp_objects, frames, reduction_choices, source_key
    from tuned_kernels.inductor_edge.graphs import graph_counts, objects_compiled_since

    watched = stats.watched_inductor_cache
    if watched is not None:  # an object copied from the capture's name came with the bundle
        watched = (watched[0], watched[1], watched[2] | cpp_objects.copied())
    return {
        "files_placed": stats.graph_files_placed,
        "files_present": stats.graph_files_present,
        "files_refused": stats.graph_files_refused,
        "files_removed": stats.graph_files_removed,
        **graph_counts(),
        "objects_compiled": objects_compiled_since(*watched) if watched is not None else [],
        "objects_from_another_install": len(cpp_objects.copied()),
        "torch_key_from_bundle": source_key.served(),
        "reductions_as_captured": reduction_choices.run_as_chosen(),
        "frames_served": frames.served(),
        "frames_traced": sum(frames.traced().values()),
        "frames_traced_first_why": next(iter(frames.traced()), ""),
    }


def append_coverage(path: Path, stats: Stats, overlay: Path | None) -> None:
    """Appends this process's hits, predictions and misses and its overlay to `path` (one JSON line;
    `tuned-kernels coverage` and `tune-misses`)."""
    from filelock import FileLock

    graphs = graph_summary(stats)
    line = {
        "hits": stats.hits + stats.nearest,
        "misses": stats.misses,
        "missed": [[name, list(key)] for name, key in stats.missed_keys],
        "predicted": [[name, list(key)] for name, key in stats.predicted_keys],
        "overlay": None if overlay is None else str(overlay),
        "graph_hits": graphs.get("fxgraph_hits", 0),
        "graph_misses": graphs.get("fxgraph_misses", 0),
        "graph_frames": graphs.get("frames_served", 0),  # loaded with their graphs: no graph looked up
    }
    with contextlib.suppress(OSError), FileLock(str(path) + ".lock", timeout=30), path.open("a") as f:
        f.write(json.dumps(line) + "\n")


def print_exit_summary(described: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):  # at exit, stderr may be closed: nothing more to say
        print("\n".join(exit_summary(described)), file=sys.stderr, flush=True)
