"""The `quality` and `choices` steps: every config re-measured now (shipped and seeded winners vs the
best now; the matmuls vs cuBLAS), and the Triton matmul and ops.matmul vs cuBLAS on the 84 full-matmul
keys (benchmarks/matmul_keys.py); their verdicts."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from bench import COMMITTED_MATMUL, HERE, Bench, geomean

if TYPE_CHECKING:
    from table import Table


def run(bench: Bench) -> None:
    names = ("exhaustive", "seeded", "bf16", "selection")
    paths = [str(bench.work / f"{n}.pb.zst") for n in names if (bench.work / f"{n}.pb.zst").exists()]
    bench.report["quality"] = bench.child("quality", paths, bench.env(bench.tune_cache))


def choices(bench: Bench) -> None:
    out = bench.work / "matmul-keys.json"
    bundle = bench.matmul_bundle if bench.matmul_bundle.exists() else COMMITTED_MATMUL
    bench.run(
        [sys.executable, str(HERE / "matmul_keys.py"), str(out)], bench.env(TUNED_KERNELS_PATH=str(bundle))
    )
    bench.report["choices"] = {"bundle": bundle.name, **json.loads(out.read_text())}


def choices_verdicts(r: dict[str, Any], t: Table) -> None:
    if "ops_vs_cublas_device" in r.get("choices", {}):  # older files had decode keys only
        c = r["choices"]
        goals = {
            "ops": ("≥ 0.97 every key, ≥ 1.02 geomean", lambda x: x["min"] >= 0.97 and x["geomean"] >= 1.02),
            "triton": (
                "≥ 0.95 geomean, ≥ 0.9 every decode key",
                lambda x: x["geomean"] >= 0.95 and x["decode_min"] >= 0.9,
            ),
        }
        for impl, field in (
            ("ops", "device"),
            ("ops", "inclusive"),
            ("ops", "kernel"),
            ("triton", "device"),
            ("triton", "kernel"),
        ):
            if f"{impl}_vs_cublas_{field}" not in c:
                continue
            goal, met = goals[impl]
            x = c[f"{impl}_vs_cublas_{field}"]
            t.row(
                "choices",
                f"{'ops.matmul' if impl == 'ops' else 'Triton matmul'} vs cuBLAS, {field}, {c['keys']} keys "
                f"(bundle {c['bundle']}): geomean / min / decode min",
                f"{x['geomean']:.3f} / {x['min']:.3f} / {x['decode_min']:.3f}",
                goal,
                met(x),
            )
        if "cublas_vs_read_floor" in c:
            floor = c["cublas_vs_read_floor"]
            t.row(
                "choices",
                "how far any kernel could go: cuBLAS vs a read of B, decode keys (geomean / max); per key "
                "cuBLAS over the faster of the two / over the fastest timed, floor included (geomean)",
                f"{floor['decode_geomean']:.3f} / {floor['decode_max']:.3f}; "
                f"{c['best_of_two_kernel_geomean']:.3f} / {c['bound_kernel_geomean']:.3f}",
                "-",
                None,
            )


def verdicts(r: dict[str, Any], t: Table) -> None:
    if "quality" in r:
        q = r["quality"]["rows"]
        shipped = geomean(
            [x["exhaustive.pb.zst"] for x in q if "exhaustive.pb.zst" in x]
            + [x["bf16.pb.zst"] for x in q if "bf16.pb.zst" in x]
        )
        t.row(
            "quality",
            "shipped config vs best re-measured now (geomean)",
            f"{shipped:.3f}",
            "≥ 0.99",
            shipped >= 0.99,
        )
        for dtype in ("float16", "bfloat16"):
            of_dtype = [x for x in q if f"dtype={dtype}" in x["case"]]
            vs = [x["vs_cublas"] for x in of_dtype if "vs_cublas" in x]
            if vs:
                t.row(
                    "quality",
                    f"Triton matmul kernel vs cuBLAS, {dtype} (per key)",
                    ", ".join(f"{v:.2f}" for v in vs),
                    "≥ 0.95",
                    min(vs) >= 0.95,
                )
            ops = [x for x in of_dtype if "ops_vs_cublas" in x]
            if ops:
                t.row(
                    "quality",
                    f"ops.matmul (kernel selection) vs cuBLAS, {dtype} (per key: chosen)",
                    ", ".join(f"{x['ops_vs_cublas']:.2f} ({x['ops_impl']})" for x in ops),
                    "≥ 0.95",
                    min(x["ops_vs_cublas"] for x in ops) >= 0.95,
                )
        seeded = [x["seeded.pb.zst"] for x in q if "seeded.pb.zst" in x]
        if "tune" in r:
            tuned = r["tune"]
            share = tuned["seeded"]["configs_benchmarked"] / max(
                1, tuned["exhaustive"]["configs_benchmarked"]
            )
            t.row(
                "tune",
                "seeded vs exhaustive: best found (geomean, re-measured now), runs",
                f"{geomean(seeded):.3f}, {share:.0%} of the runs",
                "≥ 0.98 with ≤ 30 %",
                geomean(seeded) >= 0.98 and share <= 0.30,
            )
