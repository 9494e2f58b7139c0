"""Row-wise kernels: softmax, layer norm and RMS norm, one program per row."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tuned_kernels.triton_edge.direct_launch import launch


def row_configs() -> list[triton.Config]:
    return [
        triton.Config({"BLOCK_N": b}, num_warps=w, num_stages=1)
        for b in (256, 1024, 4096, 16384)
        for w in (1, 4, 8, 16)
    ]


def _prune_short_blocks(
    configs: list[triton.Config], named_args: dict[str, object], **_: object
) -> list[triton.Config]:
    """A block shorter than the row cannot hold it; one that is 4x longer wastes lanes."""
    n = int(named_args["N"])  # type: ignore[call-overload]
    fitting = [c for c in configs if n <= c.kwargs["BLOCK_N"] <= max(4 * n, 256)]
    return fitting or [max(configs, key=lambda c: c.kwargs["BLOCK_N"])]


_PRUNE = {"early_config_prune": _prune_short_blocks}


@triton.autotune(configs=row_configs(), key=["N"], prune_configs_by=_PRUNE)
@triton.jit
def softmax_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)


@triton.autotune(configs=row_configs(), key=["N"], prune_configs_by=_PRUNE)
@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (xc * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


@triton.autotune(configs=row_configs(), key=["N"], prune_configs_by=_PRUNE)
@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _rows(x: torch.Tensor, name: str) -> tuple[torch.Tensor, int, int]:
    if x.dim() < 1 or x.shape[-1] == 0:
        raise ValueError(f"{name}: needs a last dimension of size >= 1, got shape {tuple(x.shape)}")
    flat = x.reshape(-1, x.shape[-1])
    if flat.stride(-1) != 1:
        flat = flat.contiguous()
    return flat, flat.shape[0], flat.shape[1]


def softmax(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last dimension (computed in float32, returned in x's dtype), one program per row."""
    flat, rows, n = _rows(x, "softmax")
    y = out if out is not None else torch.empty_like(flat)
    launch(softmax_kernel, (rows,), flat, y, n, flat.stride(0), y.stride(0))
    return y.view(x.shape)


def layer_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    eps: float = 1e-5,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Layer normalization over the last dimension: (x - mean) / sqrt(var + eps) * weight + bias."""
    flat, rows, n = _rows(x, "layer_norm")
    y = out if out is not None else torch.empty_like(flat)
    launch(layer_norm_kernel, (rows,), flat, weight, bias, y, n, flat.stride(0), y.stride(0), eps)
    return y.view(x.shape)


def rms_norm(
    x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6, out: torch.Tensor | None = None
) -> torch.Tensor:
    """RMS normalization over the last dimension: x / sqrt(mean(x**2) + eps) * weight."""
    flat, rows, n = _rows(x, "rms_norm")
    y = out if out is not None else torch.empty_like(flat)
    launch(rms_norm_kernel, (rows,), flat, weight, y, n, flat.stride(0), y.stride(0), eps)
    return y.view(x.shape)
