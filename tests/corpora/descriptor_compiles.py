"""Compiles, for sm90 on any machine, four configs of a kernel whose pre-hook sets its tensor descriptors'
block shapes, on two threads at once (a miss's parallel compiles), then each config once more as its timing
would: prints how many kernels Triton compiled and the caller's descriptor block shape afterwards."""

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from tuned_kernels.triton_edge import measuring
from tuned_kernels.triton_edge.compile import compiling_for, warmup
from tuned_kernels.triton_edge.compiler_facts import gpu_target
from tuned_kernels.triton_edge.counters import counting_triton
from tuned_kernels.triton_edge.keys import config_from_triton


def set_block_shape(nargs):
    nargs["x_desc"].block_shape = [nargs["BLOCK"], 16]


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, pre_hook=set_block_shape) for b in (16, 32, 64, 128)], key=["n"]
)
@triton.jit
def double_rows(x_desc, n, BLOCK: tl.constexpr):
    row = tl.program_id(0) * BLOCK
    x_desc.store([row, 0], x_desc.load([row, 0]) * 2)


x = torch.empty(256, 16, device="meta", dtype=torch.float16)
descriptor = TensorDescriptor(x, [256, 16], [16, 1], [16, 16])
named = {"x_desc": descriptor, "n": 256, "grid": (4,), "warmup": False}
configs = [config_from_triton(c) for c in double_rows.configs]
counts = counting_triton()
with compiling_for(gpu_target("cuda", 90, 32)):
    measuring.compile_all(double_rows, named, configs, jobs=2)
    for config in configs:  # as the timing launches each config: from Triton's cache, compiled before
        warmup(double_rows, named, config)
print(int(counts["compiled"]), descriptor.block_shape)
