"""The benchmark workload, and the programs benchmarks/run.py starts as fresh processes.

The workload is a slice of the built-in corpus's `full` keys that fits one 10-minute GPU call with every
mode measured: fp16 matmul (decode and prefill M on two Llama-3 8B projections), the fused matmul + bias +
SiLU, and row softmax. Shape sets: `cold` (the workload), `bf16` (matmul keys for the cuBLAS comparison).

    python workload.py first-result      # runs the workload once, prints RESULT {json}
    python workload.py hot-path          # per-launch time of a tiny autotuned kernel
    python workload.py hot-path-interleaved  # the same, tuned-kernels on and off in one process
    python workload.py quality R...      # re-measures every config of each key in R now
    python workload.py bundle-load N     # load + first look-up of the load step's synthetic N-entry bundle
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from typing import Any

STARTED_AT = time.time()  # before Triton's and our imports: run.py splits a process's wall time by phase

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from tuned_kernels.aot.corpus import Case, distinct_runs  # noqa: E402
from tuned_kernels.aot.kernels.builtin import CORPUS as BUILTIN  # noqa: E402
from tuned_kernels.aot.kernels.builtin import by_kernel  # noqa: E402

_FAMILIES = {f.name: f for f in BUILTIN}
_FP16 = [(m, n, 4096) for n in (4096, 14336) for m in (16, 4096)]
_BF16 = [(4096, n, 4096) for n in (4096, 14336)]
_FUSED = [(m, 14336, 4096) for m in (16, 4096)]
_SOFTMAX = [(4096, n) for n in (4096, 14336)]


def _matmul(shapes: list[tuple[int, int, int]], dtype: str, **extra: str) -> list[Case]:
    return [Case.of(M=m, N=n, K=k, dtype=dtype, **extra) for m, n, k in shapes]


_MATMUL_SHAPES = {"cold": _matmul(_FP16, "float16"), "bf16": _matmul(_BF16, "bfloat16")}


CORPUS = (
    dataclasses.replace(_FAMILIES["matmul"], shapes=by_kernel(_MATMUL_SHAPES, skinny=False)),
    dataclasses.replace(_FAMILIES["matmul_skinny"], shapes=by_kernel(_MATMUL_SHAPES, skinny=True)),
    dataclasses.replace(_FAMILIES["matmul_tma"], shapes=by_kernel(_MATMUL_SHAPES, skinny=False)),
    dataclasses.replace(
        _FAMILIES["matmul_bias_act"], shapes={"cold": _matmul(_FUSED, "float16", act="silu")}
    ),
    dataclasses.replace(
        _FAMILIES["softmax"], shapes={"cold": [Case.of(rows=r, N=n, dtype="float16") for r, n in _SOFTMAX]}
    ),
)


# kernel selection for ops.matmul (Triton kernel or torch.matmul), tuned after the matmul keys it times
WITH_SELECTION = (*CORPUS, dataclasses.replace(_FAMILIES["matmul_impl"], shapes=_MATMUL_SHAPES))


def first_result() -> dict[str, Any]:
    import torch

    from tuned_kernels.triton_edge.counters import counting_triton

    counts = counting_triton()
    import tuned_kernels

    if os.environ.get("TUNED_KERNELS"):
        tuned_kernels.enable()  # what tuned_kernels.pth does from site-packages (not from PYTHONPATH)
    gen = torch.Generator().manual_seed(0)
    runs = []
    workload_at = time.time()
    t0 = time.perf_counter()
    for family, case in distinct_runs(CORPUS, "cold"):
        inputs = family.make_inputs(case, "cuda", gen)
        runs.append((family, inputs, family.run(inputs)))
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    from tuned_kernels.aot.work import mismatch

    wrong = [f.name for f, i, out in runs if mismatch(out, f.reference(i), f.tolerance)]
    stats = tuned_kernels.stats() if os.environ.get("TUNED_KERNELS") else {}
    return {
        **counts,
        "started_at": STARTED_AT,
        "workload_at": workload_at,
        "done_at": time.time(),
        "workload_seconds": seconds,
        "keys": len(runs),
        "wrong": wrong,
        "hits": stats.get("hits"),
        "misses": stats.get("misses"),
        "configs_benchmarked": stats.get("configs_benchmarked"),
        "compiled_kernels": stats.get("compiled_kernels"),
    }


# Four configs that compile to the same kernel (COPY is unused), so whichever wins, both modes launch alike.
@triton.autotune(
    configs=[triton.Config({"BLOCK": 1024, "COPY": c}, num_warps=4) for c in range(4)], key=["n"]
)
@triton.jit
def _add_one(x_ptr, n, BLOCK: tl.constexpr, COPY: tl.constexpr):  # type: ignore[no-untyped-def]
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def hot_path(launches: int = 20000, blocks: int = 7) -> dict[str, Any]:
    import torch

    import tuned_kernels

    if os.environ.get("TUNED_KERNELS"):
        tuned_kernels.enable()
    x = torch.zeros(4096, device="cuda")

    def launch() -> None:
        _add_one[lambda meta: (triton.cdiv(4096, meta["BLOCK"]),)](x, 4096)

    launch()
    torch.cuda.synchronize()
    per_launch = []
    for _ in range(blocks + 1):  # the first block warms up (allocator, caches) and is dropped
        t0 = time.perf_counter()
        for _ in range(launches):
            launch()
        torch.cuda.synchronize()
        per_launch.append((time.perf_counter() - t0) / launches * 1e6)
    return {"us_per_launch": statistics.median(per_launch[1:]), "samples_us": per_launch}


def hot_path_interleaved(launches: int = 20000, rounds: int = 8) -> dict[str, Any]:
    """Per-launch time with tuned-kernels enabled and disabled in one process, blocks alternating (ABBA),
    so process-to-process noise (clocks, placement) cancels; the kernel's key was served by tuned-kernels."""
    import torch
    from tuned_kernels.registry import disable, enable

    x = torch.zeros(4096, device="cuda")

    def launch() -> None:
        _add_one[lambda meta: (triton.cdiv(4096, meta["BLOCK"]),)](x, 4096)

    enable()
    launch()
    torch.cuda.synchronize()
    samples: dict[str, list[float]] = {"on": [], "off": []}
    for r in range(rounds + 1):  # round 0 warms up and is dropped
        for mode in ("on", "off") if r % 2 else ("off", "on"):
            if mode == "on":
                enable()
            else:
                disable()
            t0 = time.perf_counter()
            for _ in range(launches):
                launch()
            torch.cuda.synchronize()
            if r:
                samples[mode].append((time.perf_counter() - t0) / launches * 1e6)
    return {mode: statistics.median(v) for mode, v in samples.items()} | {"samples_us": samples}


def quality(paths: list[str]) -> dict[str, Any]:
    """Every config of each key re-measured in this one process: the shipped winner vs the best now; the
    matmul kernel, and `ops.matmul` choosing per key as the files record, vs torch.matmul (cuBLAS)."""
    import torch
    from tuned_kernels.registry import disabled

    from tuned_kernels.kernels.matmul import MATMUL_CHOICE, matmul
    from tuned_kernels.results import read_results
    from tuned_kernels.triton_edge.benchmarker import DeviceBenchmarker
    from tuned_kernels.triton_edge.keys import kernel_identity
    from tuned_kernels.triton_edge.launch import LaunchesAnother

    bench = DeviceBenchmarker(warmup_ms=10, rep_ms=50)
    files = {path: read_results(path).entries for path in paths}
    winners = {path: {(e.kernel.name, e.key): e.best for e in entries} for path, entries in files.items()}
    choice_name = kernel_identity(MATMUL_CHOICE).name
    selection = [e for entries in files.values() for e in entries]
    rows = []
    gen = torch.Generator().manual_seed(1)
    with disabled():
        for family in CORPUS:
            name = kernel_identity(family.kernel).name
            for shape_set in ("cold", "bf16"):
                for case in family.shapes.get(shape_set, ()):
                    inputs = family.make_inputs(case, "cuda", gen)
                    try:
                        key, times = _every_config(family, inputs, bench)
                    except LaunchesAnother:
                        continue  # the case is the other matmul family's on this GPU
                    best_now = min(times.values())
                    row = {"family": family.name, "case": case.id, "best_now_ms": best_now}
                    for path, chosen in winners.items():
                        if chosen.get((name, key)) in times:
                            row[os.path.basename(path)] = best_now / times[chosen[(name, key)]]
                    if family.name in ("matmul", "matmul_skinny", "matmul_tma"):
                        a, b = inputs["a"], inputs["b"]
                        cublas = bench(lambda a=a, b=b: torch.matmul(a, b))
                        row["cublas_ms"] = cublas
                        row["vs_cublas"] = cublas / times[chosen_or_best(winners, (name, key), times)]
                        impl = next(
                            (w[(choice_name, key)] for w in winners.values() if (choice_name, key) in w), None
                        )
                        if impl is not None:  # the op as shipped: selection and kernel config from the files
                            with _serving(selection):
                                row["ops_matmul_ms"] = bench(lambda a=a, b=b: matmul(a, b))
                            row["ops_vs_cublas"] = cublas / row["ops_matmul_ms"]
                            row["ops_impl"] = dict(impl.kwargs)["IMPL"]
                    rows.append(row)
    return {"rows": rows}


@contextlib.contextmanager
def _serving(entries: list[Any]) -> Iterator[None]:
    """Within this block a registry answers from `entries` (and the installed bundles)."""
    from tuned_kernels.registry import Registry

    from tuned_kernels import resolving
    from tuned_kernels.triton_edge import autotuner

    registry = Registry()
    registry.add_local(entries)
    with autotuner.patched(), resolving.installed(registry):
        yield


def _every_config(family: Any, inputs: Any, bench: Any) -> tuple[Any, dict[Any, float]]:
    from tuned_kernels.triton_edge.keys import config_from_triton
    from tuned_kernels.triton_edge.launch import config_space, forced_config, probe_key

    def run() -> Any:
        return family.run(inputs)

    key, named = probe_key(family.kernel, run)
    times = {}
    for config in config_space(family.kernel, named):
        with forced_config(family.kernel, config):
            try:
                times[config_from_triton(config)] = bench(run)
            except Exception:  # out of resources: not a candidate
                continue
    return key, times


def chosen_or_best(winners: dict[str, dict[Any, Any]], slot: Any, times: dict[Any, float]) -> Any:
    """The first results file's winner for `slot` (kernel name, key) if it was measured, else the fastest
    config now."""
    for chosen in winners.values():
        if chosen.get(slot) in times:
            return chosen[slot]
    return min(times, key=lambda c: times[c])


SYNTHETIC = (
    "bench.synthetic_kernel",
    "5" * 64,
)  # the kernel of the load step's synthetic bundle (steps/load.py)


def synthetic_key(i: int) -> tuple[Any, ...]:
    return (i, 4096, "torch.float16")


def bundle_load(entries: int) -> dict[str, Any]:
    """Load + first look-up through the registry, as the first autotuned launch of a process does it
    (the bundle is found through TUNED_KERNELS_PATH). torch and Triton are imported first, as in any
    program that launches Triton kernels; detecting the GPU and compiler is timed apart, since Triton
    computes the same compiler key (cached) for its first compile anyway."""
    import torch  # noqa: F401
    import triton  # noqa: F401
    from tuned_kernels.hardware import compiler_fingerprint, detect
    from tuned_kernels.registry import Registry

    from tuned_kernels import model

    t0 = time.perf_counter()
    compiler_fingerprint(detect())
    t1 = time.perf_counter()
    registry = Registry()
    decision = registry.decide(model.KernelIdentity(*SYNTHETIC), synthetic_key(entries - 1), lambda _: True)
    t2 = time.perf_counter()
    return {
        "detect_ms": (t1 - t0) * 1e3,
        "load_and_first_lookup_ms": (t2 - t1) * 1e3,
        "decision": decision.kind,
        "entries": registry.summary()["entries"],
    }


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "first-result":
        out = first_result()
    elif mode == "hot-path":
        out = hot_path()
    elif mode == "hot-path-interleaved":
        out = hot_path_interleaved()
    elif mode == "quality":
        out = quality(args)
    elif mode == "bundle-load":
        out = bundle_load(int(args[0]))
    else:
        raise SystemExit(f"unknown mode {mode}")
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
