"""The one benchmarker interface, with a device-event implementation for GPUs and a wall-clock one for the
cpu target (Triton's interpreter has no driver to time with); implementations of one op are compared with
their launches counted (`launch_inclusive`)."""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from typing import Any, Protocol

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

    def __init__(
        self, warmup_ms: int = 25, rep_ms: int = 100, statistic: str = "median", queued: bool = False
    ) -> None:
        self.warmup_ms = warmup_ms
        self.rep_ms = rep_ms
        self.statistic = statistic
        self.queued = queued  # the repetitions issued behind a wait on the device (`queued_times`)

    def __call__(self, fn: Callable[[], object]) -> float:
        if self.queued:
            times = queued_times(fn, self.warmup_ms, self.rep_ms)
            return min(times) if self.statistic == "min" else statistics.median(times)
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=self.warmup_ms, rep=self.rep_ms, return_mode=self.statistic))


QUEUE_BATCH = 64  # repetitions issued behind one wait on the device
QUEUE_RETRIES = 3  # a batch the host fell behind in is issued again behind a longer wait, this many times
QUEUE_MAX_WAIT_MS = 200.0


def queued_times(fn: Callable[[], object], warmup_ms: float, rep_ms: float) -> list[float]:
    """`do_bench`'s repetitions (L2 flushed before each, device events around each), issued in batches, each
    behind a wait on the device longer than the host takes to issue the batch: the device never waits for
    the host inside a repetition, so no time holds the host's gaps (a call that launches several kernels,
    or a short one behind its launch, while other threads hold the interpreter lock). A batch the host was
    slower than its wait to issue is issued again behind a longer wait, up to `QUEUE_RETRIES` times (then
    kept as it is: a host that cannot keep up with a wait of `QUEUE_MAX_WAIT_MS`)."""
    from triton import runtime

    driver = runtime.driver.active
    device = driver.get_device_interface()
    fn()
    device.synchronize()
    cache = driver.get_empty_cache_for_benchmark()
    start, end = device.Event(enable_timing=True), device.Event(enable_timing=True)
    issued = time.perf_counter()
    start.record()
    for _ in range(5):
        driver.clear_cache(cache)
        fn()
    end.record()
    host_ms = (time.perf_counter() - issued) * 1e3 / 5
    device.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, 1e-3)
    for _ in range(max(1, int(warmup_ms / estimate_ms))):
        fn()
    wanted = max(1, int(rep_ms / estimate_ms))
    wait_ms = min(2 * host_ms * min(QUEUE_BATCH, wanted) + 0.05, QUEUE_MAX_WAIT_MS)
    retries, times = 0, list[float]()  # (retries: of the batch being issued)
    while len(times) < wanted:
        marks = [device.Event(enable_timing=True) for _ in range(2 * min(QUEUE_BATCH, wanted - len(times)))]
        slept_from, slept_to = device.Event(enable_timing=True), device.Event(enable_timing=True)
        slept_from.record()
        _sleep(int(wait_ms * _sleep_cycles_per_ms()))
        slept_to.record()
        issued = time.perf_counter()
        for begin, finish in zip(marks[::2], marks[1::2], strict=True):
            driver.clear_cache(cache)
            begin.record()
            fn()
            finish.record()
        issued_ms = (time.perf_counter() - issued) * 1e3
        device.synchronize()
        if issued_ms > slept_from.elapsed_time(slept_to) and retries < QUEUE_RETRIES:
            wait_ms, retries = min(2 * max(wait_ms, issued_ms), QUEUE_MAX_WAIT_MS), retries + 1
            continue
        times += [b.elapsed_time(f) for b, f in zip(marks[::2], marks[1::2], strict=True)]
        retries = 0
    return times


def _sleep(cycles: int) -> None:
    """The device spins for `cycles` of its clock on the current stream (`torch.cuda._sleep`)."""
    import torch

    spin: Any = torch.cuda._sleep
    spin(cycles)


@functools.cache
def _sleep_cycles_per_ms() -> float:
    """How many of `_sleep`'s cycles the device spins in a millisecond."""
    from triton import runtime

    device = runtime.driver.active.get_device_interface()
    start, end = device.Event(enable_timing=True), device.Event(enable_timing=True)
    start.record()
    _sleep(10_000_000)
    end.record()
    device.synchronize()
    return float(10_000_000 / max(start.elapsed_time(end), 1e-3))


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
