"""Where a missed key's time goes (GPU): one `benchmarks/miss.py` child run with Triton's compile stages, its
launcher builds, kernel loads and timings traced per thread.

`python benchmarks/miss_trace.py KERNEL triton|ours` (in a fresh process with an empty TRITON_CACHE_DIR, and
for `ours` TUNED_KERNELS=1 with no bundle) prints miss.py's result with, per traced step, how often it ran,
its summed seconds and its span (first start to last end, in seconds from the workload's start), as a
table and then as one JSON line.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

EVENTS: list[tuple[str, str, float, float]] = []


def traced(owner: Any, attribute: str, label: str) -> None:
    """Records each call of `owner.attribute` under `label` (where this Triton has it)."""
    original = owner.__dict__.get(attribute)
    if original is None:
        return
    is_static = isinstance(original, staticmethod)
    function: Callable[..., Any] = original.__func__ if is_static else original

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            EVENTS.append((label, threading.current_thread().name, started, time.perf_counter()))

    setattr(owner, attribute, staticmethod(wrapper) if is_static else wrapper)


def install() -> None:
    import triton.compiler as compiler_package
    import triton.testing
    from triton.backends.nvidia import compiler as nvidia_compiler
    from triton.backends.nvidia import driver as nvidia_driver
    from triton.compiler import compiler
    from triton.runtime import autotuner, build, jit
    from tuned_kernels.registry import runtime

    from tuned_kernels.triton_edge import autotuner as edge
    from tuned_kernels.triton_edge import measuring

    traced(jit.JITFunction, "_do_compile", "jit._do_compile")
    traced(compiler_package, "compile", "compile")
    for stage in ("make_ttir", "make_ttgir", "make_llir", "make_ptx", "make_cubin"):
        traced(nvidia_compiler.CUDABackend, stage, stage)
    traced(compiler.CompiledKernel, "_init_handles", "_init_handles")
    traced(nvidia_driver, "compile_module_from_src", "gcc module")
    traced(triton.testing, "do_bench", "do_bench")
    traced(autotuner.Autotuner, "_bench", "Autotuner._bench")
    traced(build, "_build", "gcc build")
    for method in ("load", "decide", "record"):
        traced(runtime.Registry, method, f"Registry.{method}")
    for function in ("kernel_identity", "tuning_key", "kernel_space", "_measured"):
        traced(edge, function, function)
    traced(measuring, "compile_all", "compile_all")


def summary(origin: float) -> dict[str, dict[str, float]]:
    rows: dict[str, dict[str, float]] = {}
    for label, _, start, end in EVENTS:
        row = rows.setdefault(label, {"n": 0, "sum": 0.0, "first": start - origin, "last": end - origin})
        row["n"] += 1
        row["sum"] = round(row["sum"] + end - start, 3)
        row["first"] = round(min(row["first"], start - origin), 3)
        row["last"] = round(max(row["last"], end - origin), 3)
    return rows


if __name__ == "__main__":
    install()
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    import miss

    origin = time.perf_counter()
    result = miss.run(sys.argv[1], sys.argv[2])
    threads = sorted({t for _, t, _, _ in EVENTS})
    builds = [
        (t, round(a - origin, 3), round(b - origin, 3)) for label, t, a, b in EVENTS if label == "gcc build"
    ]
    print(json.dumps({**result, "trace": summary(origin), "threads": threads, "builds": builds}))
