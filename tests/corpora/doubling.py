"""A test corpus with nothing planted: y = 2x over six configs (the hostile-bundle suite's program)."""

import torch
import triton
import triton.language as tl
from tuned_kernels.aot.corpus import Case, KernelFamily


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (16, 32, 64) for w in (1, 2)], key=["n"]
)
@triton.jit
def doubling_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


def double(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    doubling_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out


CORPUS = (
    KernelFamily(
        name="doubling",
        kernel=doubling_kernel,
        make_inputs=lambda case, device, gen: {"x": torch.randn(case["n"], generator=gen).to(device)},
        run=lambda i: double(i["x"], torch.empty_like(i["x"])),
        reference=lambda i: i["x"].double() * 2,
        tolerance=(1e-6, 1e-6),
        shapes={"quick": [Case.of(n=n) for n in (100, 300)]},
    ),
)
