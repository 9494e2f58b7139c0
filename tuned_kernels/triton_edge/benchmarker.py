"""The one benchmarker interface, with a device-event implementation for GPUs and a wall-clock one for the
cpu target (Triton's interpreter has no driver to time with); implementations of one op are compared with
their launches counted (`launch_inclusive`)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Protocol

from tuned_kernels.triton_edge.interpreter import interpreting


class Benchmarker(Protocol):
    def __call__(self, fn: Callable[[], object]) -> float:
        """The time of one call of `fn`, in milliseconds (the median or the least of many, as the
        implementation says)."""
        ...


class DeviceBenchmarker:
    """`triton.testing.do_bench`: device events, warm-up, L2 flush between runs; the median of many, or for
    ranking configs (`statistic="min"`) the least: a run's events also count the time the device waits for
    the host to issue the call, which grows while other threads hold the interpreter (the next key's
    compiles), so a config timed then looks slower than it is; the least of many is the nearest to the
    device's own time."""

    def __init__(self, warmup_ms: int = 25, rep_ms: int = 100, statistic: str = "median") -> None:
        self.warmup_ms = warmup_ms
        self.rep_ms = rep_ms
        self.statistic = statistic

    def __call__(self, fn: Callable[[], object]) -> float:
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=self.warmup_ms, rep=self.rep_ms, return_mode=self.statistic))


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


class LaunchInclusiveBenchmarker:
    """A call's cost to a program that makes it again and again: its device time or the host's time to issue
    it (Python, argument handling, the launcher, the driver), whichever is longer, since a stream of calls
    runs at the pace of the slower. For choosing among implementations of one op (a Triton kernel behind its
    Python launcher against a library call): a device time alone hides the launch, and on decode-sized
    GEMMs the launch is as long as the kernel."""

    def __init__(
        self,
        device: Benchmarker,
        calls: int = 20,
        batches: int = 5,
        synchronize: Callable[[], object] | None = None,
    ) -> None:
        self.device = device
        self.calls = calls  # few enough to be issued without waiting for the device's queue
        self.batches = batches
        self.synchronize = synchronize  # waits for the device (default: the active Triton driver's)

    def __call__(self, fn: Callable[[], object]) -> float:
        return max(self.device(fn), self.host_ms(fn))

    def host_ms(self, fn: Callable[[], object]) -> float:
        """The median time the host takes to issue one call, the device idle before each batch."""
        synchronize = self.synchronize or _device_synchronize()
        samples = []
        for _ in range(self.batches):
            synchronize()
            t0 = time.perf_counter()
            for _ in range(self.calls):
                fn()
            samples.append((time.perf_counter() - t0) * 1e3 / self.calls)
        synchronize()
        return statistics.median(samples)


def _device_synchronize() -> Callable[[], object]:
    from triton import runtime

    return runtime.driver.active.get_device_interface().synchronize  # type: ignore[no-any-return]


def default_benchmarker(on_gpu: bool) -> Benchmarker:
    """What tuning ranks configs with."""
    return DeviceBenchmarker(statistic="min") if on_gpu else WallClockBenchmarker()


def launch_inclusive(benchmarker: Benchmarker) -> Benchmarker:
    """`benchmarker` counting what the host spends on each call too (a wall clock already does)."""
    if isinstance(benchmarker, DeviceBenchmarker):
        return LaunchInclusiveBenchmarker(benchmarker)
    return benchmarker


def quick_benchmarker() -> Benchmarker:
    """For choosing at run time among a few implementations (an `ImplementationChoice` miss): short, and
    counting each one's launch."""
    if interpreting():
        return WallClockBenchmarker(min_reps=3, min_seconds=0.0)
    return launch_inclusive(DeviceBenchmarker(5, 20))
