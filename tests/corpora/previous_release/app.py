"""A user's program: an autotuned kernel calling a helper that reads a global constexpr."""

import sys

import torch
import triton
import triton.language as tl

FACTOR: tl.constexpr = tl.constexpr(2.0)


@triton.jit
def scaled(x):
    return x * FACTOR


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # one block of the input per program
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, scaled(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


def run(n):
    x = torch.randn(n)
    y = torch.empty_like(x)
    scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    return y, x


if __name__ == "__main__":
    for n in map(int, sys.argv[1:] or ["100"]):
        y, x = run(n)
        assert torch.allclose(y, x * FACTOR.value), "wrong result"
