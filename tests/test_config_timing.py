"""Inside a capture, Inductor's generated kernels' configs are timed by the tuner's device timing (a CUDA
graph of repetitions), everything else Inductor benchmarks by its own benchmarker. The GPU half is in
test_gpu.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import forked_python
from tuned_kernels.inductor_edge import config_timing

TIMED_BY = """
import json, torch
from torch._inductor.runtime import triton_heuristics
print(json.dumps({"graphed": getattr(triton_heuristics.CachingAutotuner.bench, "graphed", False),
                  "benchmarker": type(triton_heuristics.benchmarker).__name__}))
"""


class _Inductors:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def benchmark(self, fn: Any = None, *args: Any, **kwargs: Any) -> float:
        self.calls.append(f"benchmark on {kwargs.get('device')}")
        return 1.0

    def benchmark_gpu(self, fn: Any, *args: Any, **kwargs: Any) -> float:
        self.calls.append("benchmark_gpu")
        return 1.0

    L2_cache_size = 50 << 20


def test_only_a_gpu_config_timed_inside_inductors_bench_is_timed_by_the_tuners_timing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ours: list[Any] = []

    class Graphed:  # the tuner's timing, as far as this test needs it
        fallbacks = 0

        def __call__(self, fn: Any) -> float:
            ours.append(fn)
            return 0.5

    monkeypatch.setattr(config_timing, "_timer", Graphed())
    inductors = _Inductors()
    ranking = config_timing._RankingBenchmarker(inductors)
    kernel_call = object()

    # outside a config's timing (select_algorithm's GEMM templates, say): Inductor's own, for every call
    assert ranking.benchmark(fn=kernel_call, device="cuda", rep=40) == 1.0
    assert ranking.benchmark_gpu(kernel_call, rep=40) == 1.0
    assert ranking.L2_cache_size == 50 << 20  # the rest of Inductor's benchmarker, as it is

    monkeypatch.setattr(config_timing._graphed, "active", True, raising=False)
    before = config_timing.configs_timed()[0]
    assert ranking.benchmark(fn=kernel_call, device="cuda", rep=40, is_vetted_benchmarking=True) == 0.5
    assert ranking.benchmark_gpu(kernel_call, rep=40) == 0.5
    assert ranking.benchmark(fn=kernel_call, device="cpu") == 1.0  # a CPU kernel: Inductor's
    assert ours == [kernel_call, kernel_call]
    assert inductors.calls == ["benchmark on cuda", "benchmark_gpu", "benchmark on cpu"]
    assert config_timing.configs_timed()[0] == before + 2


def test_inductors_autotuner_is_timed_so_only_where_its_benchmarker_is_the_one_its_bench_calls() -> None:
    from torch._inductor.runtime import triton_heuristics

    from tuned_kernels.inductor_edge.shapes import INDUCTOR_CONFIG_TIMING
    from tuned_kernels.internals import holds

    assert holds(INDUCTOR_CONFIG_TIMING, triton_heuristics.CachingAutotuner)
    assert callable(getattr(triton_heuristics.benchmarker, "benchmark", None))


@pytest.mark.parametrize("run", ["capture", "served"])
def test_a_capture_times_generated_kernels_configs_its_own_way_and_a_served_program_as_inductor_does(
    tmp_path: Path, run: str
) -> None:
    """A capture tunes once for every machine its bundle reaches: it times the configs its way. A program
    served or tuning a miss at run time times them as Inductor does without tuned-kernels."""
    program = tmp_path / "timed_by.py"
    program.write_text(TIMED_BY)
    command = (
        ["capture", "-o", str(tmp_path / "out.pb.zst"), "--", sys.executable, str(program)]
        if run == "capture"
        else None
    )
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), "TUNED_KERNELS": "1"}
    argv = [sys.executable, "-m", "tuned_kernels", *command] if command else [sys.executable, str(program)]
    done = forked_python.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("{")))
    assert said == (
        {"graphed": True, "benchmarker": "_RankingBenchmarker"}
        if run == "capture"
        else {"graphed": False, "benchmarker": "InductorBenchmarker"}
    )
