"""Matmul (fp16/bf16 in, fp32 accumulation) and matmul with a fused bias + activation epilogue."""

from __future__ import annotations

import itertools

import torch
import triton
import triton.language as tl

from tuned_kernels.choice import ImplementationChoice
from tuned_kernels.kernels import skinny_matmul, tma_matmul
from tuned_kernels.triton_edge.direct_launch import launch


def _config(bm: int, bn: int, bk: int, warps: int, stages: int) -> triton.Config:
    return triton.Config(
        {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=warps, num_stages=stages
    )


def matmul_configs() -> list[triton.Config]:
    """A grid of small and medium tiles, plus the large tiles Hopper-class GPUs want for big shapes."""
    grid = itertools.product((32, 64, 128), (32, 64, 128), (32, 64), (4, 8), (3, 4))
    large = ((128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 4))
    return [_config(*c) for c in (*grid, *large)]


@triton.jit
def _matmul_tile(
    a_ptr,
    b_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    group_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % group_m
    pid_n = (pid % group) // group_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # rows and columns past the edge wrap round (their results are never stored): loads mask only on K
    ram = rm % M
    rbn = rn % N
    a_ptrs = a_ptr + ram[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rbn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    return acc, rm, rn


@triton.jit
def _store_tile(c_ptr, acc, rm, rn, M, N, stride_cm, stride_cn):
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.autotune(configs=matmul_configs(), key=["M", "N", "K"])
@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    acc, rm, rn = _matmul_tile(
        a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M
    )
    _store_tile(c_ptr, acc, rm, rn, M, N, stride_cm, stride_cn)


@triton.autotune(configs=matmul_configs(), key=["M", "N", "K", "ACTIVATION"])
@triton.jit
def matmul_bias_act_kernel(
    a_ptr,
    b_ptr,
    bias_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    ACTIVATION: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    acc, rm, rn = _matmul_tile(
        a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M
    )
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    acc = acc + bias[None, :]
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == "gelu":  # tanh approximation, as torch's gelu(approximate="tanh")
        inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = 0.5 * acc * (1.0 + (2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0))
    elif ACTIVATION == "silu":
        acc = acc / (1.0 + tl.exp(-acc))
    _store_tile(c_ptr, acc, rm, rn, M, N, stride_cm, stride_cn)


def _grid(M: int, N: int) -> object:
    return lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)


def _check(a: torch.Tensor, b: torch.Tensor) -> tuple[int, int, int]:
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} do not chain")
    if a.dtype != b.dtype:
        raise ValueError(f"matmul: dtypes differ ({a.dtype} and {b.dtype})")
    return a.shape[0], b.shape[1], a.shape[1]


def triton_matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """a @ b by Triton: up to SKINNY_M rows by the split-K kernel (skinny_matmul.py), more by the copy
    engine's kernel (tma_matmul.py) where it fits, else by tiles."""
    M, N, K = _check(a, b)
    c = out if out is not None else torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c  # nothing to compute (and no program to launch)
    if M <= skinny_matmul.SKINNY_M:
        skinny_matmul.skinny_matmul(a, b, c, M, N, K)
        return c
    if tma_matmul.fits(a, b, c, K):
        tma_matmul.tma_matmul(a, b, c, M, N, K)
        return c

    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    launch(matmul_kernel, _grid(M, N), a, b, c, M, N, K, *strides)
    return c


def torch_matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    _check(a, b)
    return torch.matmul(a, b, out=out)


def matmul_impl(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int) -> None:
    """c = a @ b by the implementation recorded for (M, N, K, dtypes): the Triton kernel or torch.matmul."""


def _triton_impl(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int) -> torch.Tensor:
    return triton_matmul(a, b, out=c)


def _torch_impl(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int) -> torch.Tensor:
    return torch.matmul(a, b, out=c)


MATMUL_CHOICE = ImplementationChoice(
    matmul_impl, {"triton": _triton_impl, "torch": _torch_impl}, key=["M", "N", "K"]
)


def matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """a @ b by whichever implementation is recorded as fastest for this shape and dtype (see
    tuned_kernels/choice.py); the Triton kernel alone is `triton_matmul`."""
    M, N, K = _check(a, b)
    # decided for this key: torch.matmul makes its own output (cheaper than one made here for it)
    impl = MATMUL_CHOICE.known(a, b, a if out is None else out, M, N, K)  # the output's dtype: a's or out's
    if impl is _torch_impl:
        return torch.matmul(a, b, out=out)
    c = out if out is not None else torch.empty((M, N), device=a.device, dtype=a.dtype)
    result: torch.Tensor = (impl or MATMUL_CHOICE)(a, b, c, M, N, K)
    return result


def matmul_bias_act(
    a: torch.Tensor,
    b: torch.Tensor,
    bias: torch.Tensor,
    activation: str = "none",
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    M, N, K = _check(a, b)
    if activation not in ACTIVATIONS:
        raise ValueError(f"matmul_bias_act: activation {activation!r} not in {ACTIVATIONS}")
    if bias.shape != (N,):
        raise ValueError(f"matmul_bias_act: bias must have shape ({N},), has {tuple(bias.shape)}")

    c = out if out is not None else torch.empty((M, N), device=a.device, dtype=a.dtype)
    launch(
        matmul_bias_act_kernel,
        _grid(M, N),
        a,
        b,
        bias,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        ACTIVATION=activation,
    )
    return c


ACTIVATIONS = ("none", "relu", "gelu", "silu")


def reference_bias_act(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor, activation: str) -> torch.Tensor:
    y = a.double() @ b.double() + bias.double()
    if activation == "relu":
        return torch.relu(y)
    if activation == "gelu":
        return torch.nn.functional.gelu(y, approximate="tanh")
    if activation == "silu":
        return torch.nn.functional.silu(y)
    return y
