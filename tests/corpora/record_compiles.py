"""Compiles a plain @triton.jit kernel for sm90 (on any machine) with the capture recorder installed: two
specializations outside benchmarking, one inside it. Prints what was recorded, one kernel per line: name,
target, files, cache key, host signature."""

import torch
import triton
import triton.language as tl

from tuned_kernels.triton_edge import cache_manager
from tuned_kernels.triton_edge.compile import compiling_for
from tuned_kernels.triton_edge.compiler_facts import gpu_target


@triton.jit
def fill(x_ptr, n, VALUE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, VALUE, mask=offs < n)


recorded = []
cache_manager.install(
    cache_manager.ArtifactStore(), lambda artifact, blobs, name: recorded.append((name, artifact))
)
x = torch.empty(100, device="meta")
with compiling_for(gpu_target("cuda", 90, 32)):
    fill.warmup(x, 100, VALUE=1, BLOCK=64, grid=(1,))
    fill.warmup(x, 100, VALUE=2, BLOCK=64, grid=(1,))
    with cache_manager.recording_paused():
        fill.warmup(x, 100, VALUE=3, BLOCK=64, grid=(1,))
for name, artifact in recorded:
    print(
        name,
        artifact.gpu_target,
        sorted(f.name.rsplit(".", 1)[1] for f in artifact.files),
        artifact.cache_key,
        ",".join(artifact.host_signature),
    )
