"""A program using a kernel library from PyPI (fla-core, pinned in the dev extras): its RMSNorm, an
autotuned Triton kernel launched through the library's own code. Checks the output against PyTorch and
prints how many kernels Triton compiled here (0 on the interpreter, which compiles nothing)."""

import sys

import torch
import triton  # noqa: F401  (the compile listener below needs Triton loaded)
from fla.modules.layernorm import rms_norm

compiled = []
if sys.argv[1] == "cuda":
    from triton import knobs

    knobs.compilation.listener = lambda *, cache_hit, **_: compiled.append(cache_hit)
shape, dtype = ((4, 64), torch.float32) if sys.argv[1] == "cpu" else ((512, 2048), torch.float16)
gen = torch.Generator().manual_seed(0)
x = torch.randn(*shape, generator=gen).to(sys.argv[1], dtype)
w = torch.randn(shape[-1], generator=gen).to(sys.argv[1], dtype)
y = rms_norm(x, w, None, eps=1e-6)
ref = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(dtype)
assert torch.allclose(y.float(), ref.float(), atol=1e-2, rtol=1e-2), (y - ref).abs().max()
print("COMPILED", compiled.count(False))
