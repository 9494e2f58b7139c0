"""The program the Helion benchmark runs (GPU): tuned_kernels.kernels.helion's matmul, softmax and RMS norm
at two shapes each, fp16. Prints one JSON line: seconds from the start of its work (torch and Helion
imported) to all six first results, Helion searches run and configs they timed, Triton kernels compiled in
this process, each kernel's config and its steady-state time (`triton.testing.do_bench`, median ms)."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import torch
import triton
from helion.autotuner.base_search import BaseSearch

from tuned_kernels.kernels import helion as kernels
from tuned_kernels.triton_edge.counters import counting_triton

SEARCHES: list[int] = []  # configs timed, per search run in this process
_search = BaseSearch.autotune


def _counted(self: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return _search(self, *args, **kwargs)
    finally:
        SEARCHES.append(int(self._autotune_metrics.num_configs_tested))


BaseSearch.autotune = _counted  # type: ignore[method-assign]
# Triton's compiles, counted by its compilation listener (not while capturing: a capture listens itself)
COUNTS = {} if os.environ.get("TUNED_KERNELS_CAPTURE") else counting_triton()


def calls() -> list[tuple[str, Any, tuple[Any, ...]]]:
    generator = torch.Generator(device="cuda").manual_seed(0)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device="cuda", dtype=torch.float16, generator=generator)

    return [
        ("matmul 1024x1024x1024", kernels.matmul, (randn(1024, 1024), randn(1024, 1024))),
        ("matmul 4096x4096x4096", kernels.matmul, (randn(4096, 4096), randn(4096, 4096))),
        ("softmax 4096x2048", kernels.softmax, (randn(4096, 2048),)),
        ("softmax 8192x4096", kernels.softmax, (randn(8192, 4096),)),
        ("rms_norm 4096x2048", kernels.rms_norm, (randn(4096, 2048), randn(2048))),
        ("rms_norm 8192x4096", kernels.rms_norm, (randn(8192, 4096), randn(4096))),
    ]


def main() -> None:
    work = calls()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _, kernel, args in work:
        kernel(*args)
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    report: dict[str, Any] = {
        "first_results_s": round(first, 3),
        "searches": len(SEARCHES),
        "configs_timed": sum(SEARCHES),
        "compiled": int(COUNTS.get("compiled", 0)),
        "kernels": {},
    }
    for name, kernel, args in work:
        config = kernel.bind(args)._config
        steady = triton.testing.do_bench(lambda kernel=kernel, args=args: kernel(*args), return_mode="median")
        report["kernels"][name] = {"ms": round(float(steady), 5), "config": dict(config.config)}
    print("HELION " + json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
