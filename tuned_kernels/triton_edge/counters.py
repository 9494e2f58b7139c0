"""What Triton does in this process, counted for the benchmarks: compilations and cache hits (Triton's
compilation listener), configs its autotuner benchmarked and the seconds they took, host-side C builds
(driver utilities, kernel launchers). Diagnostics: nothing here changes what Triton does."""

from __future__ import annotations

import time
from typing import Any


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
