"""The `graphs` step of benchmarks/run.py: a torch.compile program's first call served from a bundle that
holds its compiled graphs, against default mode with no caches and against a machine whose every cache is
warm (Inductor's, Triton's), on the GPU.

For each model and mode (and a training step): `tuned-kernels capture` in that mode (empty caches); one run
with tuned-kernels on and no bundle, whose caches then stand for a machine where every cache is warm; then, alternating,
REPEATS fresh processes of each row: the warm caches (tuned-kernels on, no bundle), the bundle only (fresh
empty caches; its saved Dynamo frames loaded where they fit), the bundle with Dynamo tracing
(`TUNED_KERNELS_FRAMES=0`: its graphs from Inductor's caches) and, once per model, default mode with no
caches and no tuned-kernels. Each run is
tests/corpora/inductor_model.py, which checks its output (and, training, a gradient) against eager PyTorch
and reports its first call, Inductor's graph cache hits and misses, Dynamo's traces, GEMM choices timed and
ms per step.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import Bench

HERE = Path(__file__).resolve().parent
APP = str(HERE.parent / "tests/corpora/inductor_model.py")
# the goals: first call at most these times default mode with no caches / a warm machine; step time
# within 3 % of the warm machine's, either way; no graph compiled, no GEMM choice timed, and nothing Inductor
# really does at the first call (GPU benchmarks, generated kernels' autotuning, coordinate descent: counted by
# inductor_model.py, since Inductor's own counters replay a cached graph's compile-time counts)
FIRST_VS_DEFAULT, FIRST_VS_WARM, STEP_VS_WARM = 0.15, 1.2, 1.03
UNTRACED_VS_DEFAULT = 0.08  # where every frame was loaded from the bundle, not traced by Dynamo
WARM_ROWS = ("warm_caches", "second_warm_caches")  # each warm machine's runs, made by a tuning of its own


def case_name(model: str, mode: str, train: bool) -> str:
    return f"{model} {mode}{' train' if train else ''}"


def run(
    bench: Bench,
    repeats: int,
    cases: list[tuple[str, str, bool]],
    on_cuda1: bool = False,
    samples: str | None = None,
    steady_only: bool = False,
    second_warm: bool = False,
) -> None:
    """Measures each (model, mode, train) case into bench.report["graphs"], and once per model (and
    training or not) default mode with no caches into bench.report["graphs_default"]. `on_cuda1` (a machine
    of two GPUs): the bundle, captured on cuda:0, served to the program on cuda:1 too, in the same rounds.
    `steady_only`: the bundle's and the warm machine's runs alone (their steady steps), no traced row and no
    default-mode baseline. `second_warm`: a second warm machine, made by a tuning of its own like the first,
    in the same rounds (how far two tunings of one machine are apart).
    `samples`: a folder where each bundle, warm and default run writes its first call's stacks, sampled
    every millisecond (diagnostics: the sampling thread costs the call some time of its own)."""
    if samples:
        Path(samples).mkdir(parents=True, exist_ok=True)

    def sampled(name: str, run: int) -> dict[str, str]:
        return {"INDUCTOR_MODEL_SAMPLES": str(Path(samples) / f"{name}-{run}.folded")} if samples else {}

    def fresh(**extra: str) -> dict[str, str]:
        return bench.env(
            TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp(prefix="inductor-", dir=bench.work), **extra
        )

    def model_run(argv: list[str], env: dict[str, str], tool: bool = False) -> dict[str, Any]:
        command = ["capture", "-o", env["BUNDLE"], "--", sys.executable, APP, *argv] if tool else [APP, *argv]
        wall, out = (bench.tool if tool else lambda a, e: bench.run([sys.executable, *a], e))(command, env)
        return {**json.loads(out.splitlines()[-1]), "wall_s": round(wall, 3)}

    out: dict[str, Any] = bench.report.setdefault("graphs", {})
    defaults: dict[str, Any] = bench.report.setdefault("graphs_default", {})
    for model, mode, train in cases:
        tail = ["train"] if train else []
        argv = [model, mode, *tail]
        bundle = str(bench.work / f"graphs-{model}-{mode}{'-train' if train else ''}.pb.zst")
        rows: dict[str, Any] = {"capture": model_run(argv, fresh(BUNDLE=bundle), tool=True)}
        out[case_name(model, mode, train)] = rows  # saved after each round: a call cut short keeps them
        rows["bundle_bytes"] = Path(bundle).stat().st_size
        _, shown = bench.tool(["inspect", "--json", bundle], bench.env())
        rows["graph_triton_kernels"] = json.loads(shown).get("graph_triton_kernels")  # shipped, launched
        # a machine whose every cache is warm: Inductor's and Triton's caches as a first run with
        # tuned-kernels on and no bundle left them (the compiled graphs' keys include its choices hook; the
        # graph files a served run places are taken out again once no bundle offers them)
        warms = {row: fresh() for row in WARM_ROWS[: 2 if second_warm else 1]}
        for warm in warms.values():
            model_run(argv, {**warm, "TUNED_KERNELS": "1"})
        baseline = case_name(model, "default", train)
        for run in range(repeats):  # alternating, so drifts of the machine fall on all rows alike
            case = case_name(model, mode, train).replace(" ", "-")
            served = fresh(TUNED_KERNELS="1", TUNED_KERNELS_PATH=bundle, **sampled(f"{case}-bundle", run))
            for row, warm in warms.items():
                sample = sampled(f"{case}-{'warm' if row == WARM_ROWS[0] else row}", run)
                rows.setdefault(row, []).append(model_run(argv, {**warm, "TUNED_KERNELS": "1", **sample}))
            rows.setdefault("bundle_only", []).append(model_run(argv, served))
            if not steady_only:
                traced = fresh(TUNED_KERNELS="1", TUNED_KERNELS_PATH=bundle, TUNED_KERNELS_FRAMES="0")
                rows.setdefault("bundle_traced", []).append(model_run(argv, traced))  # the graph caches
                if on_cuda1:
                    moved = fresh(TUNED_KERNELS="1", TUNED_KERNELS_PATH=bundle, INDUCTOR_MODEL_GPU="1")
                    rows.setdefault("bundle_on_cuda1", []).append(model_run(argv, moved))
                if len(defaults.get(baseline, [])) < repeats:  # the baseline once per model
                    cold = fresh(**sampled(baseline.replace(" ", "-") + "-no-caches", run))
                    defaults.setdefault(baseline, []).append(model_run([model, "default", *tail], cold))
            bench.save()


def verdicts(report: dict[str, Any], row: Callable[[str, str, str, str, bool | None], None]) -> None:
    """One row of BENCHMARKS.md's table per case, with the goals above."""
    for name, m in report.get("graphs", {}).items():
        model, _, rest = name.partition(" ")
        baseline = report.get("graphs_default", {}).get(case_name(model, "default", rest.endswith("train")))
        step_text, step_met = _steady_step(m)
        if not baseline:  # the steady step alone (steady_only)
            row(
                "graphs",
                f"torch.compile {name}: steady step, bundle only vs every cache warm (medians of "
                f"{len(m['bundle_only'])} fresh processes each)",
                step_text,
                "step's kernels within 3 % of warm, either way",
                step_met,
            )
            continue

        bundle, warm = _median(m["bundle_only"], "first_call_s"), _median(m["warm_caches"], "first_call_s")
        default = _median(baseline, "first_call_s")
        compiled = max(x["fxgraph_misses"] + x["autograd_misses"] for x in m["bundle_only"])
        timed = max(x["gemm_choices_benchmarked"] for x in m["bundle_only"])
        worked = [x["first_call_work"] for x in m["bundle_only"] if "first_call_work" in x]
        work = max((sum(w.values()) for w in worked), default=None)  # None: a file from before it was counted
        work_text = (
            "" if work is None else f", Inductor's own tuning at the first call {work} (max of the runs)"
        )
        untraced = all(x.get("frames_traced") == 0 for x in m["bundle_only"])
        goal = UNTRACED_VS_DEFAULT if untraced else FIRST_VS_DEFAULT
        traced_text = ""
        if m.get("bundle_traced"):
            alone = _median(m["bundle_traced"], "first_call_s")
            traced_text = (
                f"; Dynamo {'traced nothing' if untraced else 'traced'} (frames loaded from the bundle); "
                f"traced, graphs from the caches (TUNED_KERNELS_FRAMES=0): {alone:.2f} s = {alone / default:.2f}x"
            )
        row(
            "graphs",
            f"torch.compile {name}: first call, bundle only (median of {len(m['bundle_only'])} fresh processes, "
            "empty caches) vs default mode with no caches / every cache warm",
            f"{bundle:.2f} s vs {default:.2f} s / {warm:.2f} s = **{bundle / default:.2f}x** / "
            f"**{bundle / warm:.2f}x**; its capture (no caches) {m['capture']['first_call_s']:.1f} s; graphs "
            f"compiled {compiled}, GEMM choices timed {timed}{work_text}; {step_text}; bundle "
            f"{m['bundle_bytes'] // 1024} KiB{_kernels(m.get('graph_triton_kernels'))}{traced_text}",
            f"≤ {goal}x default{' (not traced)' if untraced else ''}, ≤ {FIRST_VS_WARM}x warm, 0 compiled, "
            "0 timed, 0 tuned, step within 3 %",
            bundle <= goal * default
            and bundle <= FIRST_VS_WARM * warm
            and compiled == 0
            and timed == 0
            and work == 0
            and step_met,
        )


def _steady_step(m: dict[str, Any]) -> tuple[str, bool]:
    """A case's steady step, bundle vs warm machine: what to print, and whether it is within STEP_VS_WARM.
    Judged on the GPU time of the step's kernels where the runs measured it (a sub-millisecond step's wall
    time is the host launching kernels, which moves between fresh processes of one cache by up to half), on
    the wall step in files from before."""
    step, warm = _median(m["bundle_only"], "step_ms"), _median(m["warm_caches"], "step_ms")
    wall = (
        f"step {step:.3f} vs {warm:.3f} ms warm (runs: bundle {_spread(m['bundle_only'], 'step_ms')}, "
        f"warm {_spread(m['warm_caches'], 'step_ms')} ms)"
    )
    if not all("kernel_ms" in x for x in m["bundle_only"] + m["warm_caches"]):
        return wall, warm / STEP_VS_WARM <= step <= STEP_VS_WARM * warm
    kernels, warm_kernels = _median(m["bundle_only"], "kernel_ms"), _median(m["warm_caches"], "kernel_ms")
    runs = m["bundle_only"] + m["warm_caches"]
    launched = sorted({len(x["kernels"]) if "kernels" in x else x["kernels_per_step"] for x in runs})
    text = (
        f"its kernels' GPU time {kernels:.3f} vs {warm_kernels:.3f} ms warm = **{kernels / warm_kernels:.3f}x** "
        f"(runs: bundle {_spread(m['bundle_only'], 'kernel_ms', 3)}, warm "
        f"{_spread(m['warm_caches'], 'kernel_ms', 3)} ms; {'/'.join(map(str, launched))} kernels a step"
        + (
            f"; the capture's own run {m['capture']['kernel_ms']:.3f} ms"
            if "kernel_ms" in m["capture"]
            else ""
        )
        + _graph_timed(m["capture"])
        + f"); wall {wall}"
        + _second_warm(m, kernels, warm_kernels)
    )
    return text, warm_kernels / STEP_VS_WARM <= kernels <= STEP_VS_WARM * warm_kernels


def _graph_timed(capture: dict[str, Any]) -> str:
    """`, its configs timed from CUDA graphs: 167 (0 by do_bench)` where the capture's run said."""
    timed = capture.get("configs_graph_timed")
    return f", its configs timed from CUDA graphs: {timed[0]} ({timed[1]} by do_bench)" if timed else ""


def _second_warm(m: dict[str, Any], bundle: float, warm: float) -> str:
    """`; a second warm machine, tuned on its own: 0.112 ms = 1.057x the first, the bundle 0.998x of it`
    where the runs had one (kernels' GPU time a step)."""
    other = m.get(WARM_ROWS[1])
    if not other:
        return ""
    second = _median(other, "kernel_ms")
    return (
        f"; a second warm machine, tuned on its own: {second:.3f} ms (runs {_spread(other, 'kernel_ms', 3)}) "
        f"= **{second / warm:.3f}x** the first, the bundle **{bundle / second:.3f}x** of it"
    )


def on_another_gpu(report: dict[str, Any], row: Callable[[str, str, str, str, bool | None], None]) -> None:
    """A row per case measured on cuda:1 too: the bundle captured on cuda:0, served on cuda:1 (every graph
    found and moved, nothing tuned, the outputs cuda:0's) against the same bundle served on cuda:0."""
    for name, m in report.get("graphs", {}).items():
        moved = m.get("bundle_on_cuda1")
        if not moved:
            continue
        here, there = _median(m["bundle_only"], "first_call_s"), _median(moved, "first_call_s")
        compiled = max(x["fxgraph_misses"] + x["autograd_misses"] for x in moved)
        work = max(sum(x["first_call_work"].values()) + x["gemm_choices_benchmarked"] for x in moved)
        same = {x["output_digest"] for x in moved} <= {x["output_digest"] for x in m["bundle_only"]}
        devices = sorted({x.get("device", "?") for x in moved})
        row(
            "graphs",
            f"torch.compile {name}: the bundle captured on cuda:0 served on {', '.join(devices)} (median of "
            f"{len(moved)} fresh processes, empty caches) vs served on cuda:0",
            f"{there:.2f} s vs {here:.2f} s = **{there / here:.2f}x**; graphs compiled {compiled}, tuned at the "
            f"first call {work}; outputs {'the same as' if same else 'NOT the same as'} on cuda:0",
            "0 compiled, 0 tuned, the same outputs",
            compiled == 0 and work == 0 and same,
        )


def _median(runs: list[dict[str, Any]], field: str) -> float:
    return float(statistics.median(x[field] for x in runs))


def _spread(runs: list[dict[str, Any]], field: str, digits: int = 2) -> str:
    """The least and the largest `field` (milliseconds) of `runs`: `0.47–0.80`."""
    steps = [x[field] for x in runs]
    return f"{min(steps):.{digits}f}–{max(steps):.{digits}f}"


def _kernels(counted: dict[str, int] | None) -> str:
    """`, its graphs' Triton kernels: 41 shipped, 41 launched` (nothing for a file from before it was kept)."""
    if not counted:
        return ""
    return f", its graphs' Triton kernels: {counted['shipped']} shipped, {counted['launched']} launched"
