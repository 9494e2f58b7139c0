"""`ops.matmul` as shipped against `torch.matmul` on the decode-sized keys where per-call Python cost shows:
one process, CUDA-event medians (`triton.testing.do_bench`), the committed full-matmul
bundle serving the implementation choice: `TUNED_KERNELS_PATH=benchmarks/matmul-full-h100-triton3.6.0.pb.zst
python benchmarks/ops_overhead.py`."""

from __future__ import annotations

import json

import torch
from triton.testing import do_bench

import tuned_kernels

KEYS = [(1, 4096, 4096), (16, 4096, 4096), (64, 4096, 4096), (1, 6144, 4096), (16, 14336, 4096)]


def main() -> None:
    tuned_kernels.enable()
    from tuned_kernels import ops

    rows = []
    for dtype in (torch.float16, torch.bfloat16):
        for m, n, k in KEYS:
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(k, n, device="cuda", dtype=dtype)
            ops.matmul(a, b)  # decided (served) once
            op = do_bench(lambda a=a, b=b: ops.matmul(a, b), warmup=25, rep=200, return_mode="median")
            ref = do_bench(lambda a=a, b=b: torch.matmul(a, b), warmup=25, rep=200, return_mode="median")
            rows.append({"key": f"{str(dtype)[6:]} {m}x{n}x{k}", "ops_us": op * 1e3, "torch_us": ref * 1e3})
            print(f"{rows[-1]['key']:>24}  ops.matmul {op * 1e3:7.1f} us  torch.matmul {ref * 1e3:7.1f} us  "
                  f"{ref / op:.3f}x")  # fmt: skip
    stats = tuned_kernels.stats()
    print("RESULT " + json.dumps({"rows": rows, "hits": stats["hits"], "misses": stats["misses"]}))


if __name__ == "__main__":
    main()
