"""Host time to issue one matmul call, per path (the launch is as long as a decode GEMM):
torch.matmul, the Triton matmul at M = 16 (split-K kernel) and M = 256 (on Hopper the copy engine's kernel,
else the tile kernel), ops.matmul; then where the Triton matmul's time goes at each M (cProfile, top
functions by own time). One process:
`python benchmarks/launch_cost.py [on|off]` (on: tuned-kernels enabled, TUNED_KERNELS_PATH's bundle serving;
off: Triton's own autotuner, tuned at the first call)."""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import statistics
import sys
import time
from collections.abc import Callable

import torch

import tuned_kernels


def host_us(fn: Callable[[], object], calls: int = 20, batches: int = 25) -> float:
    """Median per-call time of `calls` calls issued back to back, the device idle before each batch."""
    samples = []
    for _ in range(batches):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    torch.cuda.synchronize()
    return statistics.median(samples)


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "on"
    if mode == "on":
        tuned_kernels.enable()
    from tuned_kernels.kernels.matmul import matmul, triton_matmul

    rows, profiles = {}, []
    for m in (16, 256):  # the split-K kernel; above 64 rows, the copy engine's on Hopper
        a = torch.randn(m, 4096, device="cuda", dtype=torch.float16)
        b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        c = torch.empty(m, 4096, device="cuda", dtype=torch.float16)
        paths = {
            "torch.matmul": lambda a=a, b=b, c=c: torch.matmul(a, b, out=c),
            "triton_matmul": lambda a=a, b=b, c=c: triton_matmul(a, b, out=c),
            "ops.matmul": lambda a=a, b=b, c=c: matmul(a, b, out=c),
        }
        for name, fn in paths.items():
            fn()  # tuned or served once
            rows[f"{name} M={m}"] = host_us(fn)
            print(f"{mode:>3} {name:>14} M={m:<4} {rows[f'{name} M={m}']:6.1f} us per call", flush=True)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(2000):
            paths["triton_matmul"]()
        profile.disable()
        torch.cuda.synchronize()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(22)
        profiles.append(f"triton_matmul M={m}, 2000 calls:\n{text.getvalue()}")
    print("\n".join(profiles))  # after every host time, as before
    print("RESULT " + json.dumps({"mode": mode, "host_us": rows}))


if __name__ == "__main__":
    main()
