"""A test corpus: y = x + 1 over n elements, whose own pruning keeps only the blocks that fit n four times
(a small n keeps BLOCK=16 alone), so a config predicted for an unseen n must be one the pruning keeps."""

import torch
import triton
import triton.language as tl
from tuned_kernels.aot.corpus import Case, KernelFamily

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (16, 32, 64, 128) for w in (1, 2)]


def blocks_that_fit(configs, named, **kwargs):
    fit = [c for c in configs if c.kwargs["BLOCK"] * 4 <= named["n"]]
    return fit or [c for c in configs if c.kwargs["BLOCK"] == 16]


@triton.autotune(configs=CONFIGS, key=["n"], prune_configs_by={"early_config_prune": blocks_that_fit})
@triton.jit
def add_one_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x + 1.0, mask=offs < n)


def add_one(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    add_one_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out


def make_inputs(case, device, gen):
    x = torch.randn(case["n"], generator=gen).to(device)
    return {"x": x, "out": torch.full_like(x, float("nan"))}


CORPUS = (
    KernelFamily(
        name="add_one",
        kernel=add_one_kernel,
        make_inputs=make_inputs,
        run=lambda i: add_one(i["x"], i["out"]),
        reference=lambda i: i["x"].double() + 1,
        tolerance=(1e-6, 1e-6),
        shapes={"quick": [Case.of(n=n) for n in (2048, 4096)]},
    ),
)
