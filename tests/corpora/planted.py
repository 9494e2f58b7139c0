"""A test corpus: y = 2x with one deliberately wrong config (BUG=1 computes 3x) planted in its space."""

import torch
import triton
import triton.language as tl
from tuned_kernels.aot.corpus import Case, KernelFamily

CONFIGS = [triton.Config({"BLOCK": b, "BUG": 0}, num_warps=w) for b in (16, 32, 64) for w in (1, 2)]
# the smallest block: under the interpreter (a cost per program) it is never the fastest, so a miss timed at
# run time, where nothing checks the numbers, does not take it (a tuner that checks them rejects it)
CONFIGS.append(triton.Config({"BLOCK": 16, "BUG": 1}, num_warps=1))


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, BUG: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * (3.0 if BUG else 2.0), mask=offs < n)


def double(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    double_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out


def make_inputs(case, device, gen):
    x = torch.randn(case["n"], generator=gen).to(device)
    return {"x": x, "out": torch.full_like(x, float("nan"))}


CORPUS = (
    KernelFamily(
        name="double",
        kernel=double_kernel,
        make_inputs=make_inputs,
        run=lambda i: double(i["x"], i["out"]),
        reference=lambda i: i["x"].double() * 2,
        tolerance=(1e-6, 1e-6),
        shapes={"quick": [Case.of(n=n) for n in (100, 300, 1000, 3000)]},
    ),
)
