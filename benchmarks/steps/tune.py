"""The `tune` step: `tuned-kernels tune` exhaustive and seeded on the workload, kernel selection for
ops.matmul and bf16 keys (with `matmul-tune`/`choice-tune`: the full-matmul bundle tuned again); its
verdicts: tune's wall time over its pure benchmark time, and against Triton's autotuner."""

from __future__ import annotations

import dataclasses
import json
import shutil
from typing import TYPE_CHECKING, Any

from bench import COMMITTED_MATMUL, WORKLOAD, Bench

if TYPE_CHECKING:
    from table import Table


MATMUL_TUNES = {  # step: the families of the full-matmul bundle tuned again, the other entries kept
    "matmul-tune": ("matmul", "matmul_tma", "matmul_impl"),
    "choice-tune": ("matmul_impl",),
}


def run(bench: Bench, only_exhaustive: bool = False) -> None:
    out: dict[str, Any] = {}
    selection = (
        "--corpus",
        f"{WORKLOAD}:WITH_SELECTION",
        "--kernels",
        "matmul",
        "--kernels",
        "matmul_skinny",
        "--kernels",
        "matmul_tma",
        "--kernels",
        "matmul_impl",
    )
    runs = (
        ("exhaustive", "cold", "exhaustive", ("--corpus", WORKLOAD)),
        ("seeded", "cold", "seeded", ("--corpus", WORKLOAD)),
        # kernel selection for ops.matmul: resumes from the exhaustive file, so only the choice is timed
        ("selection", "cold", "exhaustive", (*selection, "--resume")),
        ("bf16", "bf16", "exhaustive", selection),
    )
    for name, shapes, strategy, extra in runs[:1] if only_exhaustive else runs:
        output = bench.work / f"{name}.pb.zst"
        if name == "selection":
            shutil.copyfile(bench.work / "exhaustive.pb.zst", output)
        # seeded starts from an empty compile cache too, so its wall time compares with exhaustive's
        cache = bench.tune_cache if name != "seeded" else None
        wall, text = bench.tool(
            [*("tune", "--shapes", shapes, "--strategy", strategy, "-o", str(output), "--json", *extra)],
            bench.env(cache),
        )
        out[name] = {"wall_s": wall, **json.loads(text)}
    bench.report["tune"] = out


def matmul_tune(bench: Bench, families: tuple[str, ...]) -> None:
    """The committed bundle's entries of every other kernel kept, `families` tuned again (resuming an
    earlier call's file)."""
    from tuned_kernels.aot.kernels.builtin import CORPUS

    from tuned_kernels.results import read_results, write_results
    from tuned_kernels.triton_edge.keys import kernel_identity

    committed = read_results(COMMITTED_MATMUL)
    again = {kernel_identity(f.kernel) for f in CORPUS if f.name in families}
    kept = tuple(e for e in committed.entries if e.kernel not in again)
    if not bench.matmul_bundle.exists():  # else an earlier call's, resumed
        write_results(bench.matmul_bundle, dataclasses.replace(committed, entries=kept))
    kernels = [arg for name in families for arg in ("--kernels", name)]
    argv = ["tune", "--shapes", "full", *kernels, "--resume", "-o", str(bench.matmul_bundle), "--json"]
    wall, text = bench.tool(argv, bench.env())
    bench.report["matmul_tune"] = {"wall_s": wall, "kept_entries": len(kept), **json.loads(text)}


def verdicts(r: dict[str, Any], t: Table) -> None:
    if "tune" in r:
        ex = r["tune"]["exhaustive"]
        pure = ex["benchmark_seconds"]
        t.row(
            "tune",
            "our tune wall vs pure benchmark time",
            f"{ex['seconds']:.1f} s vs {pure:.1f} s = {ex['seconds'] / pure:.2f}x "
            f"(compile {ex['compile_seconds']:.1f} s)"
            + (
                f"; the whole process {ex['wall_s']:.1f} s = {ex['wall_s'] / pure:.2f}x"
                if "wall_s" in ex
                else ""
            ),
            "≤ 1.3x",
            ex["seconds"] / pure <= 1.3,
        )
        if "cold" in r and r["cold"]["no_caches"]:
            triton_s = r["cold"]["no_caches"]["autotune_seconds"]
            t.row(
                "tune",
                "our tune vs Triton's autotuner, same keys and configs",
                f"{ex['wall_s']:.1f} s vs {triton_s:.1f} s "
                f"(+ {r['cold']['no_caches']['wall_s'] - triton_s:.1f} s rest of the process)",
                "-",
                None,
            )
