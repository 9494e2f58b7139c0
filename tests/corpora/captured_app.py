"""A program as a user writes it (nothing of tuned-kernels in it): an autotuned kernel whose configs carry a
pre_hook, launched with a constexpr that is not in its key (two specializations of one winner), and a plain
@triton.jit kernel. Prints the number of kernels Triton compiled in this process."""

import sys

import torch
import triton
import triton.language as tl
from triton import knobs

compiled = []
knobs.compilation.listener = lambda *, cache_hit, **_: compiled.append(cache_hit)


def zero_output(nargs):
    nargs["y_ptr"].zero_()


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": b}, num_warps=w, pre_hook=zero_output)
        for b in (64, 256, 1024)
        for w in (2, 4)
    ],
    key=["n"],
)
@triton.jit
def scale(x_ptr, y_ptr, n, HOW: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = x * 2.0 if HOW == "double" else x * 3.0
    tl.store(y_ptr + offs, y, mask=offs < n)


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


n = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
x = torch.randn(n, device="cuda")
y = torch.empty_like(x)
grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
scale[grid](x, y, n, HOW="double")
assert torch.allclose(y, 2 * x)
scale[grid](x, y, n, HOW="triple")
assert torch.allclose(y, 3 * x)
before = x.clone()
add_one[(triton.cdiv(n, 256),)](x, n, BLOCK=256)
assert torch.allclose(x, before + 1)
torch.cuda.synchronize()
print("COMPILED", compiled.count(False))
