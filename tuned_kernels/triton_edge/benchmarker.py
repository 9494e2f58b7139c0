"""The one benchmarker interface, with a device-event implementation for GPUs and a wall-clock one for the
cpu target (Triton's interpreter has no driver to time with)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Protocol

from tuned_kernels.triton_edge.interpreter import interpreting


class Benchmarker(Protocol):
    def __call__(self, fn: Callable[[], object]) -> float:
        """The median time of one call of `fn`, in milliseconds."""
        ...


class DeviceBenchmarker:
    """`triton.testing.do_bench`: device events, warm-up, L2 flush between runs, the median of many."""

    def __init__(self, warmup_ms: int = 25, rep_ms: int = 100) -> None:
        self.warmup_ms = warmup_ms
        self.rep_ms = rep_ms

    def __call__(self, fn: Callable[[], object]) -> float:
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=self.warmup_ms, rep=self.rep_ms, return_mode="median"))


class WallClockBenchmarker:
    """Runs `fn` once to warm up, then at least `min_reps` times or for `min_seconds`; returns the median."""

    def __init__(self, min_reps: int = 3, min_seconds: float = 0.05, max_reps: int = 50) -> None:
        self.min_reps = min_reps
        self.min_seconds = min_seconds
        self.max_reps = max_reps

    def __call__(self, fn: Callable[[], object]) -> float:
        fn()
        samples: list[float] = []
        start = time.perf_counter()
        while len(samples) < self.min_reps or (
            time.perf_counter() - start < self.min_seconds and len(samples) < self.max_reps
        ):
            t0 = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(samples)


def default_benchmarker(on_gpu: bool) -> Benchmarker:
    return DeviceBenchmarker() if on_gpu else WallClockBenchmarker()


def quick_benchmarker() -> Benchmarker:
    """For choosing at run time among a few implementations (an `ImplementationChoice` miss): short."""
    return WallClockBenchmarker(min_reps=3, min_seconds=0.0) if interpreting() else DeviceBenchmarker(5, 20)
