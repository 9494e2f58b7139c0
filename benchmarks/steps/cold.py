"""The `cold` step: time to first results of the workload in a fresh process with no caches, with
Triton's warm caches, and with only the bundle wheel installed (empty Triton cache); its verdict."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from typing import TYPE_CHECKING, Any

from bench import Bench

if TYPE_CHECKING:
    from table import Table


def run(bench: Bench, repeats: int, with_no_caches: bool = True) -> None:
    if not (bench.work / "exhaustive.pb.zst").exists():
        raise SystemExit(f"cold: no {bench.work}/exhaustive.pb.zst; run the tune step first (same --work)")
    _, text = bench.tool(
        ["build-wheel", str(bench.work / "exhaustive.pb.zst"), "-o", str(bench.work / "dist")], bench.env()
    )
    site = bench.work / "bundle-site"
    wheels = [str(p) for p in (bench.work / "dist").glob("*.whl")]
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), *wheels],
        check=True,
        timeout=600,
    )
    warm = str(bench.work / "triton-warm")
    if with_no_caches:
        no_caches = bench.child("first-result", [], bench.env(warm, TRITON_CACHE_AUTOTUNING="1"))
    else:  # a shorter diagnostic run: Triton's warm caches made by one autotuning pass, not timed
        bench.child("first-result", [], bench.env(warm, TRITON_CACHE_AUTOTUNING="1"))
        no_caches = None
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    warm_runs, bundle_runs, no_warmup_runs = [], [], []
    for _ in range(repeats):  # alternating, so drifts of the machine fall on all three
        warm_runs.append(bench.child("first-result", [], bench.env(warm, TRITON_CACHE_AUTOTUNING="1")))
        bundle_runs.append(
            bench.child("first-result", [], bench.env(None, TUNED_KERNELS="1", PYTHONPATH=path))
        )
        no_warmup = bench.env(None, TUNED_KERNELS="1", PYTHONPATH=path, TUNED_KERNELS_WARMUP="0")
        no_warmup_runs.append(bench.child("first-result", [], no_warmup))
    bench.report["cold"] = {
        "wheel": text.strip(),
        "no_caches": no_caches,
        "triton_warm": warm_runs,
        "bundle_only": bundle_runs,
        "no_warmup": no_warmup_runs,
    }


def verdicts(r: dict[str, Any], t: Table) -> None:
    if "cold" in r:
        c = r["cold"]
        b = statistics.median(x["wall_s"] for x in c["triton_warm"])
        bundle = statistics.median(x["wall_s"] for x in c["bundle_only"])
        last = c["bundle_only"][-1]
        none = c["no_caches"]
        a = none["wall_s"] if none else float("nan")
        t.row(
            "cold",
            f"first results, {last['keys']} keys, fresh process: no caches / Triton warm / bundle only",
            f"{a:.1f} s / {b:.2f} s / {bundle:.2f} s = {bundle / a:.3f}x / {bundle / b:.2f}x; bundle: "
            f"{last['compiled']} compiled, "
            f"{last['configs_benchmarked']} benchmarked, {last['hits']} hits, "
            f"{max(x.get('host_builds', 0) for x in c['bundle_only'])} host builds (the warm-up's too)",
            "bundle ≤ 1.00x warm, ≤ 0.10x none; 0 compiled, 0 benchmarked",
            bundle <= b
            and (none is None or bundle / a <= 0.10)
            and last["compiled"] == 0
            and last["configs_benchmarked"] == 0,
        )
        without = [x["wall_s"] for x in c.get("no_warmup", [])]
        no_warmup = f", without the warm-up {statistics.median(without) / b:.3f}x" if without else ""
        t.lines.append(
            f"|  | ratios | bundle/warm {bundle / b:.3f}{no_warmup}, none/bundle {a / bundle:.1f}x | | |"
        )
        warm_tuning = statistics.median(x.get("autotune_seconds", 0.0) for x in c["triton_warm"])
        if warm_tuning > 0:  # Triton caches no tuning of configs with pre-hooks: a warm process re-tunes them
            untuned = statistics.median(
                x["wall_s"] - x.get("autotune_seconds", 0.0) for x in c["triton_warm"]
            )
            t.lines.append(
                f"|  | Triton warm's own tuning | {c['triton_warm'][-1]['autotune_benchmarks']} configs, "
                f"{warm_tuning:.2f} s per process; warm without it {untuned:.2f} s, bundle/that "
                f"{bundle / untuned:.3f}x | | |"
            )
        if "phases_s" in last:
            phases = {
                mode: "/".join(
                    f"{statistics.median(x['phases_s'][p] for x in c[mode]):.2f}" for p in last["phases_s"]
                )
                for mode in ("triton_warm", "bundle_only", "no_warmup")
                if c.get(mode)
            }
            said = "; ".join(f"{mode} {times}" for mode, times in phases.items())
            t.lines.append(f"|  | phases (median s): {'/'.join(last['phases_s'])} | {said} | | |")
