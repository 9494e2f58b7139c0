"""What Triton does in this process, counted for the benchmarks: compilations and cache hits (Triton's
compilation listener), configs its autotuner benchmarked and the seconds they took, host-side C builds
(driver utilities, kernel launchers), and where a compile's time goes (`tracing_triton`). Diagnostics:
nothing here changes what Triton does."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

Event = tuple[str, str, float, float]  # what ran, on which thread, from, to (perf_counter seconds)


def counting_triton() -> dict[str, float]:
    """Counts compilations (Triton's compilation listener) and configs benchmarked by Triton's autotuner."""
    from triton import knobs
    from triton.runtime.autotuner import Autotuner

    counts = {"compiled": 0, "compile_cache_hits": 0, "autotune_benchmarks": 0, "autotune_seconds": 0.0}

    def listener(*, cache_hit: bool, **_: Any) -> None:
        counts["compile_cache_hits" if cache_hit else "compiled"] += 1

    knobs.compilation.listener = listener
    bench = Autotuner._bench

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return bench(self, *args, **kwargs)
        finally:
            counts["autotune_benchmarks"] += 1
            counts["autotune_seconds"] += time.perf_counter() - t0

    Autotuner._bench = counted
    count_host_builds(counts)
    return counts


def count_host_builds(counts: dict[str, float]) -> None:
    """Host-side C builds Triton makes into its cache (its driver utilities, kernel launchers)."""
    from triton.runtime import build

    counts["host_builds"] = 0
    counts["host_build_seconds"] = 0.0
    name = next((n for n in ("_build", "_compile_so") if hasattr(build, n)), None)
    if name is None:
        return
    original = getattr(build, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            counts["host_builds"] += 1
            counts["host_build_seconds"] += time.perf_counter() - t0

    setattr(build, name, timed)


def traced(owner: Any, attribute: str, label: str, events: list[Event]) -> None:
    """Each call of `owner.attribute` recorded in `events` under `label` (where this Triton has it)."""
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
            events.append((label, threading.current_thread().name, started, time.perf_counter()))

    setattr(owner, attribute, staticmethod(wrapper) if is_static else wrapper)


def tracing_triton(events: list[Event]) -> None:
    """Triton's compiles (each stage of the NVIDIA backend), its host C builds and module loads, kernel
    loads (`_init_handles`) and timings (`do_bench`, `Autotuner._bench`) recorded in `events`, per thread."""
    import triton.compiler as compiler_package
    import triton.testing
    from triton.backends.nvidia import compiler as nvidia_compiler
    from triton.backends.nvidia import driver as nvidia_driver
    from triton.compiler import compiler
    from triton.runtime import autotuner, build, jit

    traced(jit.JITFunction, "_do_compile", "jit._do_compile", events)
    traced(compiler_package, "compile", "compile", events)
    for stage in ("make_ttir", "make_ttgir", "make_llir", "make_ptx", "make_cubin"):
        traced(nvidia_compiler.CUDABackend, stage, stage, events)
    traced(compiler.CompiledKernel, "_init_handles", "_init_handles", events)
    traced(nvidia_driver, "compile_module_from_src", "gcc module", events)
    traced(triton.testing, "do_bench", "do_bench", events)
    traced(autotuner.Autotuner, "_bench", "Autotuner._bench", events)
    traced(build, "_build", "gcc build", events)
