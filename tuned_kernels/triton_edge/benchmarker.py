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
    """Device events, warm-up, L2 flushed before each repetition; the median of many, or for ranking configs
    (`statistic="min"`) the least. With `graphed`, the repetitions run from one CUDA graph (`graph_times`):
    `do_bench` issues each repetition from the host, and while other threads hold the interpreter (the next
    key's compiles) a short kernel waits for its launch inside its own events, timed hundreds of times
    slower than it is. A call that cannot be captured in a graph (it waits for the device, say) is timed
    by `do_bench`; `fallbacks` counts those."""

    windowed = True  # its repetitions run back to back in one window of the device's time: see `windowed`

    def __init__(
        self, warmup_ms: int = 25, rep_ms: int = 100, statistic: str = "median", graphed: bool = False
    ) -> None:
        self.warmup_ms = warmup_ms
        self.rep_ms = rep_ms
        self.statistic = statistic
        self.graphed = graphed
        self.fallbacks = 0

    def __call__(self, fn: Callable[[], object]) -> float:
        if self.graphed:
            times = graph_times(fn, self.warmup_ms, self.rep_ms)
            if times is not None:
                return min(times) if self.statistic == "min" else statistics.median(times)
            self.fallbacks += 1
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=self.warmup_ms, rep=self.rep_ms, return_mode=self.statistic))


def windowed(benchmarker: Benchmarker) -> bool:
    """Whether `benchmarker` times each call in one window of the device's time, which may run slow as a
    whole (the card's clock): the tuner times the configs closest to the fastest again in other windows."""
    return bool(getattr(benchmarker, "windowed", False))


def fallbacks(benchmarker: Benchmarker) -> int:
    """How many calls `benchmarker` has timed by `do_bench` because a CUDA graph could not capture them (0
    for one that does not capture)."""
    return int(getattr(benchmarker, "fallbacks", 0))


GRAPH_REPS = 32  # repetitions captured in one graph (capturing costs the host a launch each), replayed
GRAPH_MAX_REPLAYS = 32  # as often as `rep_ms` asks, up to this many times (a short kernel: 1,024 samples)
GRAPH_ESTIMATE_REPS = 5
TIMING_SWITCH_S = 1e-4  # the interpreter's switch interval while timing (Python's default: 5 ms)


def graph_times(fn: Callable[[], object], warmup_ms: float, rep_ms: float) -> list[float] | None:
    """`fn`'s repetitions (L2 flushed before each, a pair of device events around each) captured in a CUDA
    graph and run by one launch per replay: no repetition waits for the host, however busy the host is. A
    few repetitions first, to estimate one (its flush too, as `do_bench` counts it) and to warm up; then a
    graph of up to `GRAPH_REPS`, replayed until `rep_ms` of repetitions have run.

    None where `fn` cannot be captured: a call that waits for the device (reads a result on the host) is
    found by running it once on the capture stream with torch's synchronisation check set to fail, before
    any capture. A capture that fails all the same leaves torch's allocator with a capture it never ended,
    so from then on this process times by `do_bench` (`graphs_given_up`, said once).

    Capturing issues every call from the host, and while other threads hold the interpreter (compiles)
    each launch waits for it up to the switch interval, as does each replay: the interval is shortened
    while timing, so a capture takes milliseconds, not seconds."""
    import sys

    import torch
    from triton import runtime

    if _given_up:
        return None
    driver = runtime.driver.active
    flush = functools.partial(driver.clear_cache, driver.get_empty_cache_for_benchmark())
    stream = capture_stream(torch.cuda.current_device())
    if not _runs_without_waiting(fn, flush, stream):
        return None
    switch = sys.getswitchinterval()
    try:
        sys.setswitchinterval(TIMING_SWITCH_S)
        small = _captured(fn, flush, GRAPH_ESTIMATE_REPS, stream)
        estimate_ms = max(small.whole_ms() / GRAPH_ESTIMATE_REPS, 1e-3)
        warm_until = time.perf_counter() + warmup_ms / 1e3
        while time.perf_counter() < warm_until:
            small.replay()
        wanted = max(1, int(rep_ms / estimate_ms))
        graph = _captured(fn, flush, min(wanted, GRAPH_REPS), stream)
        replays = min(GRAPH_MAX_REPLAYS, -(-wanted // GRAPH_REPS))
        return [t for _ in range(replays) for t in graph.replay()]
    except Exception as exc:
        _give_up(exc)
        torch.cuda.synchronize()
        return None
    finally:
        sys.setswitchinterval(switch)


_given_up: list[str] = []  # why this process stopped capturing (empty: it has not)


def graphs_given_up() -> str | None:
    """Why this process times by `do_bench` now (a capture failed), or None."""
    return _given_up[0] if _given_up else None


def _give_up(exc: BaseException) -> None:
    from tuned_kernels.errors import one_line, warn

    if not _given_up:
        _given_up.append(f"{type(exc).__name__}: {one_line(str(exc), 120)}")
        warn(
            f"a config's call could not be captured in a CUDA graph ({_given_up[0]}): configs are timed by "
            "do_bench from here on, which counts the host's gaps between launches"
        )


def _runs_without_waiting(fn: Callable[[], object], flush: Callable[[], object], stream: Any) -> bool:
    """Runs a flush and `fn` once on `stream` (compiling and loading what `fn` launches, and making what it
    keeps per stream, outside any capture), failing any wait for the device torch sees: whether `fn` can be
    captured as far as torch can tell without capturing."""
    import torch

    stream.wait_stream(torch.cuda.current_stream())
    mode = torch.cuda.get_sync_debug_mode()
    try:
        with torch.cuda.stream(stream):
            torch.cuda.set_sync_debug_mode("error")
            try:
                flush()
                fn()
            finally:
                torch.cuda.set_sync_debug_mode(mode)
    except RuntimeError:
        return False
    finally:
        torch.cuda.synchronize()
    return True


class _Graph:
    def __init__(self, graph: Any, marks: list[Any]) -> None:
        self.graph, self.marks = graph, marks

    def replay(self) -> list[float]:
        """Runs the graph; each repetition's time in milliseconds."""
        import torch

        self.graph.replay()
        torch.cuda.synchronize()
        return [b.elapsed_time(e) for b, e in zip(self.marks[::2], self.marks[1::2], strict=True)]

    def whole_ms(self) -> float:
        """Runs the graph; its whole time on the device (flushes included), in milliseconds."""
        import torch

        event: Any = torch.cuda.Event
        start, end = event(enable_timing=True), event(enable_timing=True)
        start.record()
        self.graph.replay()
        end.record()
        torch.cuda.synchronize()
        return float(start.elapsed_time(end))


def _captured(fn: Callable[[], object], flush: Callable[[], object], reps: int, stream: Any) -> _Graph:
    """`reps` repetitions captured on `stream`. Not through `torch.cuda.graph`: on entering it empties
    torch's allocator cache (and, in some versions, collects garbage), milliseconds to tens of them each
    time, twice a config; the memory a tune's configs use is the same from one to the next."""
    import torch

    event: Any = torch.cuda.Event
    marks = [event(enable_timing=True, external=True) for _ in range(2 * reps)]
    graph = torch.cuda.CUDAGraph()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        graph.capture_begin(capture_error_mode="thread_local")
        try:
            for begin, end in zip(marks[::2], marks[1::2], strict=True):
                flush()
                begin.record()
                fn()
                end.record()
        finally:
            graph.capture_end()
    return _Graph(graph, marks)


@functools.cache
def capture_stream(device: int) -> Any:
    """One stream per device to capture on (a graph is captured on a stream other than the default)."""
    import torch

    stream: Any = torch.cuda.Stream
    return stream(device=device)


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
    return DeviceBenchmarker(statistic="min", graphed=True) if on_gpu else WallClockBenchmarker()


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
