"""Compiles, for sm90 on any machine, the winner of a kernel whose config has a pre_hook, from the
named arguments `Autotuner.run` hands `prune_configs` (they include `grid` and `warmup`)."""

import torch
import triton
import triton.language as tl

from tuned_kernels.triton_edge.compile import compiling_for, warmup
from tuned_kernels.triton_edge.compiler_facts import gpu_target
from tuned_kernels.triton_edge.keys import config_from_triton

calls = []


def hook(nargs):
    calls.append(nargs["BLOCK"])


@triton.autotune(
    configs=[triton.Config({"BLOCK": 32}, pre_hook=hook), triton.Config({"BLOCK": 64})], key=["n"]
)
@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


x = torch.empty(100, device="meta")
named = {"x_ptr": x, "n": 100, "grid": (4,), "warmup": False}  # as `Autotuner.run` hands prune_configs
with compiling_for(gpu_target("cuda", 90, 32)):
    compiled = warmup(scale, named, config_from_triton(scale.configs[0]))
print(compiled.metadata.target, calls)
