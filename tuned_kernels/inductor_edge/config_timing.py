"""Inside a capture, the configs of Inductor's generated kernels are ranked by the tuner's own device timing.

Inductor times each config of a pointwise or reduction kernel (at its first launch, and in coordinate
descent) with a pair of device events around each call issued from the host. A kernel of a few
microseconds may then wait inside its events for the host to launch it, which ranks its configs by the
host's pace as much as by their own (what `tune` found for its own timing, and the likely cause of this):
two tunings of one model on one GPU kept configs whose kernels took twice as long as the other's (H200: a
pointwise kernel of `moe` at 0.011 vs 0.0055 ms a step). A capture
tunes once for every machine it is served to, so there it times each config as `tune` does
(triton_edge/benchmarker.py: the repetitions captured in a CUDA graph, the L2 cache flushed before each,
the least kept); everything else Inductor does around the timing (its skipping of configs that spill
registers, its cloning of the arguments a kernel writes, its cache of the winner) stays Inductor's.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from tuned_kernels.triton_edge.benchmarker import DeviceBenchmarker, capture_stream

WARMUP_MS, REP_MS = 5, 25  # Inductor's own window per config is 25 ms

_graphed = threading.local()  # set while a kernel's config is timed through `bench`: its timer is ours
_timer = DeviceBenchmarker(WARMUP_MS, REP_MS, statistic="min", graphed=True)
_timed = [0]  # configs this process timed so


def configs_timed() -> tuple[int, int]:
    """How many of Inductor's generated kernels' configs this process timed by the tuner's device timing,
    and how many of those by `do_bench` because a CUDA graph could not capture their call."""
    return _timed[0], _timer.fallbacks


class _RankingBenchmarker:
    """Stands for Inductor's benchmarker in its autotuner's module: a GPU call timed while `bench` runs is
    timed by the tuner's device timing; anything else is Inductor's benchmarker's."""

    def __init__(self, inductors: Any) -> None:
        self.inductors = inductors

    def benchmark(self, fn: Any = None, *args: Any, **kwargs: Any) -> Any:
        if getattr(_graphed, "active", False) and kwargs.get("device") == "cuda" and not args:
            return _timed_by_graphs(fn)
        return self.inductors.benchmark(fn, *args, **kwargs)

    def benchmark_gpu(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_graphed, "active", False) and not args:
            return _timed_by_graphs(fn)
        return self.inductors.benchmark_gpu(fn, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inductors, name)


def _timed_by_graphs(fn: Any) -> float:
    _timed[0] += 1
    return _timer(fn)


def install() -> None:
    """Times the configs of Inductor's generated kernels in this process by the tuner's device timing,
    where Inductor's autotuner is laid out as expected (else said once, and Inductor times them)."""
    from torch._inductor.runtime import triton_heuristics

    from tuned_kernels.inductor_edge.shapes import INDUCTOR_CONFIG_TIMING
    from tuned_kernels.internals import holds

    autotuner: Any = triton_heuristics.CachingAutotuner
    inductors = getattr(triton_heuristics, "benchmarker", None)
    if not holds(INDUCTOR_CONFIG_TIMING, autotuner) or inductors is None:
        return
    if getattr(autotuner.bench, "graphed", False):
        return
    setattr(triton_heuristics, "benchmarker", _RankingBenchmarker(inductors))  # noqa: B010
    bench = autotuner.bench

    @functools.wraps(bench)
    def graphed(self: Any, launcher: Any, *args: Any, **kwargs: Any) -> Any:
        if not _on_cuda(self):
            return bench(self, launcher, *args, **kwargs)
        import torch

        # Inductor launches on the stream current as `bench` starts: the one the timing captures on
        stream, outer = capture_stream(torch.cuda.current_device()), torch.cuda.current_stream()
        stream.wait_stream(outer)
        was, _graphed.active = getattr(_graphed, "active", False), True
        try:
            with torch.cuda.stream(stream):
                return bench(self, launcher, *args, **kwargs)
        finally:
            _graphed.active = was
            outer.wait_stream(stream)

    graphed.graphed = True  # type: ignore[attr-defined]
    autotuner.bench = graphed


def _on_cuda(kernel: Any) -> bool:
    """Whether `kernel` runs on a CUDA GPU, with no CUDA graph being captured (Inductor's cudagraphs)."""
    props = getattr(kernel, "device_props", None)
    if getattr(props, "type", None) != "cuda":
        return False
    import torch

    return not torch.cuda.is_current_stream_capturing()
