"""A program using liger-kernel (PyPI, carried to the GPU machine as a wheel): DyT forward and backward
(autotuned, `reset_to_zero`) and the fused gate/up projection + SwiGLU (autotuned configs whose pre_hooks set
TMA descriptor block shapes; Hopper). Prints its outputs' checksums and how many kernels Triton compiled."""

import torch
from liger_kernel.ops.dyt import liger_dyt_bwd, liger_dyt_fwd
from liger_kernel.ops.mlp import gemm_swiglu
from triton import knobs

compiled = []
knobs.compilation.listener = lambda *, cache_hit, **_: compiled.append(cache_hit)
gen = torch.Generator().manual_seed(0)
x = torch.randn(64, 2048, generator=gen).cuda()
alpha, gamma, beta = (
    torch.tensor([0.5]).cuda(),
    torch.randn(2048, generator=gen).cuda(),
    torch.randn(2048, generator=gen).cuda(),
)
y = liger_dyt_fwd(x, alpha, gamma, beta)
assert torch.allclose(y, gamma * torch.tanh(alpha * x) + beta, atol=1e-4), (
    (y - (gamma * torch.tanh(alpha * x) + beta)).abs().max()
)
dx, da, dg, db = liger_dyt_bwd(torch.ones_like(x), x, alpha, gamma, beta)
inp = torch.randn(1, 256, 1024, generator=gen).cuda().bfloat16()
wg, wu = (torch.randn(2048, 1024, generator=gen).cuda().bfloat16() / 32 for _ in range(2))
a, _ = gemm_swiglu(inp, wg, wu, 1.0, store_preact=False)
torch.cuda.synchronize()
print("CHECKSUM", [round(float(t.float().sum()), 2) for t in (y, dx, dg, db, a)])
print("COMPILED", compiled.count(False))
