"""The `load` and `size` steps: a synthetic bundle loaded and looked up, and bytes per entry with and
without compiled kernels; their verdicts."""

from __future__ import annotations

import dataclasses
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import HERE, Bench

if TYPE_CHECKING:
    from table import Table


def synthetic_bundle(path: Path, entries: int) -> None:
    """A results file of `entries` keys for one kernel, for this machine's target and compiler."""
    sys.path.insert(0, str(HERE))
    from tuned_kernels.hardware import compiler_fingerprint, detect
    from workload import SYNTHETIC, synthetic_key

    from tuned_kernels import model
    from tuned_kernels.results import write_results

    target = detect()
    header = model.Header(
        target, compiler_fingerprint(target), model.Producer.TUNE, "bench", "2026-01-01T00:00:00Z"
    )
    kernel = model.KernelIdentity(*SYNTHETIC)
    configs = [
        model.Config.of({"BLOCK_M": 2**b, "BLOCK_N": 64}, num_warps=4 * (b % 2 + 1)) for b in range(4, 8)
    ]
    rows = tuple(
        model.Entry(
            kernel, synthetic_key(i), configs[i % 4], (model.Timing(configs[i % 4], 0.01 + i * 1e-6),)
        )
        for i in range(entries)
    )
    write_results(path, model.Results(header, rows))


def run(bench: Bench, entries: int, repeats: int) -> None:
    bundle = bench.work / "synthetic.pb.zst"
    synthetic_bundle(bundle, entries)
    runs = [
        bench.child("bundle-load", [str(entries)], bench.env(TUNED_KERNELS_PATH=str(bundle)))
        for _ in range(repeats)
    ]
    bench.report["load"] = {"entries": entries, "bytes": bundle.stat().st_size, "runs": runs}


def size(bench: Bench) -> None:
    from tuned_kernels.results import read_results, write_results

    results = read_results(bench.work / "exhaustive.pb.zst")
    bare = results.with_entries(tuple(dataclasses.replace(e, artifacts=()) for e in results.entries))
    write_results(bench.work / "bare.pb.zst", bare)
    n = len(results.entries)
    bench.report["size"] = {
        "entries": n,
        "with_artifacts_bytes": (bench.work / "exhaustive.pb.zst").stat().st_size,
        "without_artifacts_bytes": (bench.work / "bare.pb.zst").stat().st_size,
    }


def verdicts(r: dict[str, Any], t: Table) -> None:
    if "load" in r:
        ms = statistics.median(x["load_and_first_lookup_ms"] for x in r["load"]["runs"])
        t.row(
            "load",
            f"{r['load']['entries']} -entry bundle ({r['load']['bytes']} B): load + first look-up",
            f"{ms:.0f} ms",
            "< 100 ms",
            ms < 100,
        )
    if "size" in r:
        s = r["size"]
        t.row(
            "size",
            "bundle bytes per entry, with / without compiled kernels",
            f"{s['with_artifacts_bytes'] / s['entries']:.0f} / {s['without_artifacts_bytes'] / s['entries']:.0f}",
            "-",
            None,
        )
