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
    """The file holds cuBLAS's time over ours per key (its min: our worst); a row gives ours over cuBLAS's."""
    if "ops_vs_cublas_device" in r.get("choices", {}):  # older files had decode keys only
        c = r["choices"]
        goals = {  # set as rates (at least 0.97x cuBLAS's speed on every key ...), checked as times
            "ops": (
                f"≤ {1 / 0.97:.3f} every key, ≤ {1 / 1.02:.3f} geomean",
                lambda x: x["max"] <= 1 / 0.97 and x["geomean"] <= 1 / 1.02,
            ),
            "triton": (
                f"≤ {1 / 0.95:.3f} geomean, ≤ {1 / 0.9:.3f} every decode key",
                lambda x: x["geomean"] <= 1 / 0.95 and x["decode_max"] <= 1 / 0.9,
            ),
        }
        for impl, field in (
            ("ops", "device"),
            ("ops", "inclusive"),
            ("ops", "kernel"),
            ("triton", "device"),
            ("triton", "inclusive"),
            ("triton", "kernel"),
        ):
            if f"{impl}_vs_cublas_{field}" not in c:
                continue
            goal, met = goals[impl]
            rates = c[f"{impl}_vs_cublas_{field}"]
            x = {
                "geomean": 1 / rates["geomean"],
                "max": 1 / rates["min"],
                "decode_max": 1 / rates["decode_min"],
            }
            decode_geomean = (
                f" (decode geomean {1 / rates['decode_geomean']:.3f})" if "decode_geomean" in rates else ""
            )
            t.row(
                "choices",
                f"{'ops.matmul' if impl == 'ops' else 'Triton matmul'} vs cuBLAS, {field}, {c['keys']} keys "
                f"(bundle {c['bundle']}): time, ours over cuBLAS's: geomean / max / decode max",
                f"{x['geomean']:.3f} / {x['max']:.3f} / {x['decode_max']:.3f}{decode_geomean}",
                goal,
                met(x),
            )
        if "cublas_vs_read_floor" in c:
            floor = c["cublas_vs_read_floor"]
            t.row(
                "choices",
                "how far any kernel could go: cuBLAS's time over a read of B's, decode keys (geomean / max); "
                "per key the faster of the two over cuBLAS / the fastest timed, floor included, over cuBLAS "
                "(geomean)",
                f"{floor['decode_geomean']:.3f} / {floor['decode_max']:.3f}; "
                f"{1 / c['best_of_two_kernel_geomean']:.3f} / {1 / c['bound_kernel_geomean']:.3f}",
                "-",
                None,
            )


def verdicts(r: dict[str, Any], t: Table) -> None:
    if "quality" in r:
        q = r["quality"]["rows"]
        # the file holds best-now time over the shipped config's, and cuBLAS's time over ours: rows invert them
        shipped = 1 / geomean(
            [x["exhaustive.pb.zst"] for x in q if "exhaustive.pb.zst" in x]
            + [x["bf16.pb.zst"] for x in q if "bf16.pb.zst" in x]
        )
        t.row(
            "quality",
            "shipped config's time over the best re-measured now (geomean)",
            f"{shipped:.3f}",
            f"≤ {1 / 0.99:.3f}",
            shipped <= 1 / 0.99,
        )
        for dtype in ("float16", "bfloat16"):
            of_dtype = [x for x in q if f"dtype={dtype}" in x["case"]]
            vs = [1 / x["vs_cublas"] for x in of_dtype if "vs_cublas" in x]
            if vs:
                t.row(
                    "quality",
                    f"Triton matmul kernel's time over cuBLAS's, {dtype} (per key)",
                    ", ".join(f"{v:.2f}" for v in vs),
                    f"≤ {1 / 0.95:.3f}",
                    max(vs) <= 1 / 0.95,
                )
            ops = [(1 / x["ops_vs_cublas"], x["ops_impl"]) for x in of_dtype if "ops_vs_cublas" in x]
            if ops:
                t.row(
                    "quality",
                    f"ops.matmul's (kernel selection) time over cuBLAS's, {dtype} (per key: chosen)",
                    ", ".join(f"{v:.2f} ({impl})" for v, impl in ops),
                    f"≤ {1 / 0.95:.3f}",
                    max(v for v, _ in ops) <= 1 / 0.95,
                )
        seeded = 1 / geomean([x["seeded.pb.zst"] for x in q if "seeded.pb.zst" in x])
        if "tune" in r:
            tuned = r["tune"]
            share = tuned["seeded"]["configs_benchmarked"] / max(
                1, tuned["exhaustive"]["configs_benchmarked"]
            )
            t.row(
                "tune",
                "seeded vs exhaustive: the best found, its time over the exhaustive's (geomean, re-measured "
                "now), runs",
                f"{seeded:.3f}, {share:.0%} of the runs",
                f"≤ {1 / 0.98:.3f} with ≤ 30 %",
                seeded <= 1 / 0.98 and share <= 0.30,
            )
