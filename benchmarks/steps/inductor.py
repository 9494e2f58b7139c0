"""The `inductor` step: torch.compile max-autotune's first call with no caches, warm caches and only the
bundle its capture made, against default mode; its verdicts."""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from typing import TYPE_CHECKING, Any

from bench import HERE, Bench

if TYPE_CHECKING:
    from table import Table


def run(bench: Bench, repeats: int, models: list[str]) -> None:
    app = [sys.executable, str(HERE.parent / "tests/corpora/inductor_model.py")]

    def fresh(**extra: str) -> dict[str, str]:
        return bench.env(
            TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp(prefix="inductor-", dir=bench.work), **extra
        )

    def model_run(model: str, mode: str, env: dict[str, str]) -> dict[str, Any]:
        wall, out = bench.run([*app, model, mode], env)
        return {**json.loads(out.splitlines()[-1]), "wall_s": round(wall, 3)}

    out: dict[str, Any] = bench.report.get("inductor", {})
    for model in models:
        bundle = bench.work / f"inductor-{model}.pb.zst"
        capture_s, _ = bench.tool(["capture", "-o", str(bundle), "--", *app, model, "max-autotune"], fresh())
        warm = fresh()  # its caches, made by the cold run, serve the warm runs
        cold = model_run(model, "max-autotune", warm)
        rows: dict[str, Any] = {"capture_s": round(capture_s, 3), "no_caches": cold}
        for _ in range(repeats):  # alternating, so drifts of the machine fall on all rows alike
            served = fresh(TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle))
            for row, (mode, env) in {
                "warm_caches": ("max-autotune", warm),
                "bundle_only": ("max-autotune", served),
                "default_no_caches": ("default", fresh()),
            }.items():
                rows.setdefault(row, []).append(model_run(model, mode, env))
        if model == "mlp":
            served = fresh(TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle))
            rows["new_shape_bundle"] = model_run("mlp+new", "max-autotune", served)
        out[model] = rows
        bench.report["inductor"] = out
        bench.save()


def verdicts(r: dict[str, Any], t: Table) -> None:
    for name, m in r.get("inductor", {}).items():
        first = {
            k: statistics.median(x["first_call_s"] for x in m[k]) for k in ("warm_caches", "bundle_only")
        }
        default = statistics.median(x["first_call_s"] for x in m["default_no_caches"])
        step = {k: statistics.median(x["step_ms"] for x in m[k]) for k in ("warm_caches", "bundle_only")}
        benchmarked = max(x["gemm_choices_benchmarked"] for x in m["bundle_only"])
        t.row(
            "inductor",
            f"torch.compile {name}: first call, max-autotune no caches / warm / bundle only; default no caches",
            f"{m['no_caches']['first_call_s']:.1f} s ({m['no_caches']['gemm_choices_benchmarked']} GEMM choices "
            f"timed) / {first['warm_caches']:.2f} s / {first['bundle_only']:.2f} s ({benchmarked}) / "
            f"{default:.2f} s = {first['bundle_only'] / default:.2f}x default; step {step['bundle_only']:.3f} vs "
            f"{step['warm_caches']:.3f} ms warm",
            "bundle ≤ 1.1x default, 0 timed, step within 3 % of warm",
            first["bundle_only"] <= 1.1 * default
            and benchmarked == 0
            and step["warm_caches"] / 1.03 <= step["bundle_only"] <= 1.03 * step["warm_caches"],
        )
        if "new_shape_bundle" in m:
            n = m["new_shape_bundle"]
            what = f"{name} + one new layer shape, bundle only: GEMM autotunings"
            t.row("inductor", what, str(n["gemm_autotunings"]), "1", n["gemm_autotunings"] == 1)
