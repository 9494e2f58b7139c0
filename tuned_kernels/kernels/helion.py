"""Three Helion kernels a user meets (as in Helion's examples): a matmul, a row-wise softmax and an RMS norm,
each autotuned by Helion on first use for each new specialization. Importing this module imports Helion
(`pip install 'tuned-kernels[helion]'`)."""

from __future__ import annotations

import helion
import helion.language as hl
import torch


@helion.kernel(static_shapes=True)
def matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    _, n = y.size()
    out = torch.empty([m, n], dtype=torch.promote_types(x.dtype, y.dtype), device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, x[tile_m, tile_k], y[tile_k, tile_n])
        out[tile_m, tile_n] = acc.to(out.dtype)
    return out


@helion.kernel(static_shapes=True)
def softmax(x: torch.Tensor) -> torch.Tensor:
    n, _ = x.size()
    out = torch.empty_like(x)
    for tile_n in hl.tile(n):
        out[tile_n, :] = torch.nn.functional.softmax(x[tile_n, :], dim=1)
    return out


@helion.kernel(static_shapes=True)
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    m, _ = x.size()
    out = torch.empty_like(x)
    for tile_m in hl.tile(m):
        row = x[tile_m, :].to(torch.float32)
        inverse_rms = torch.rsqrt(torch.mean(row * row, dim=-1) + eps)
        out[tile_m, :] = (row * inverse_rms[:, None] * weight[:].to(torch.float32)).to(out.dtype)
    return out
