"""The `programs` step: real programs (ours, fla-core, liger-kernel) in fresh processes with no caches,
Triton's warm caches and only their captured bundle; its verdicts."""

from __future__ import annotations

import statistics
import sys
import tempfile
from typing import TYPE_CHECKING, Any

from bench import HERE, Bench

if TYPE_CHECKING:
    from table import Table


PROGRAMS = {  # as tests/test_gpu.py runs them
    "ours": ["tests/corpora/captured_app.py"],
    "fla-core": ["tests/corpora/fla_norm_app.py", "cuda"],
    "liger-kernel": ["tests/corpora/liger_app.py"],
}


def _compiled_and_wall(run: tuple[float, str]) -> dict[str, float]:
    wall, out = run
    return {"wall_s": wall, "compiled": float(out.split("COMPILED ", 1)[1].split()[0])}


def run(bench: Bench, repeats: int, names: list[str]) -> None:
    out: dict[str, Any] = bench.report.get("programs", {})
    for name in names:
        argv = PROGRAMS[name]
        app = [sys.executable, str(HERE.parent / argv[0]), *argv[1:]]
        warm = tempfile.mkdtemp(prefix="triton-warm-", dir=bench.work)
        none = _compiled_and_wall(bench.run(app, bench.env(warm, TRITON_CACHE_AUTOTUNING="1")))
        bundle = bench.work / f"{name}.pb.zst"
        bench.tool(["capture", "-o", str(bundle), "--", *app], bench.env())
        rows: dict[str, list[dict[str, float]]] = {"triton_warm": [], "bundle_only": [], "no_warmup": []}
        for _ in range(repeats):  # alternating, so drifts of the machine fall on all
            warm_env = bench.env(warm, TRITON_CACHE_AUTOTUNING="1")
            rows["triton_warm"].append(_compiled_and_wall(bench.run(app, warm_env)))
            served = bench.env(None, TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle))
            rows["bundle_only"].append(_compiled_and_wall(bench.run(app, served)))
            served = bench.env(
                None, TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle), TUNED_KERNELS_WARMUP="0"
            )
            rows["no_warmup"].append(_compiled_and_wall(bench.run(app, served)))
        out[name] = {"no_caches": none, **rows}
    bench.report["programs"] = out


def verdicts(r: dict[str, Any], t: Table) -> None:
    for name, p in r.get("programs", {}).items():
        warm = statistics.median(x["wall_s"] for x in p["triton_warm"])
        bundle = statistics.median(x["wall_s"] for x in p["bundle_only"])
        compiled = max(x["compiled"] for x in p["bundle_only"])
        warm_compiled = max(x["compiled"] for x in p["triton_warm"])
        no_warmup = (
            f"; without the warm-up {statistics.median(x['wall_s'] for x in p['no_warmup']) / warm:.3f}x"
            if p.get("no_warmup")
            else ""
        )
        t.row(
            "programs",
            f"{name}: whole process, no caches / Triton warm / bundle only (compiled)",
            f"{p['no_caches']['wall_s']:.2f} s ({p['no_caches']['compiled']:.0f}) / {warm:.2f} s "
            f"({warm_compiled:.0f}) / {bundle:.2f} s ({compiled:.0f}) = {bundle / warm:.3f}x warm{no_warmup}",
            "bundle ≤ 1.05x warm, 0 compiled",
            bundle <= 1.05 * warm and compiled == 0,
        )
