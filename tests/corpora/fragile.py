"""A kernel whose own config space holds a config that cannot launch (BLOCK=48: not a power of two)."""

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 48}), triton.Config({"BLOCK": 32})], key=["n"])
@triton.jit
def triple_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)


def triple(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    triple_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out
