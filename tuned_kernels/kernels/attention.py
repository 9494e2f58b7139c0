"""Attention forward (flash-attention style online softmax); q, k, v are (batch, heads, seq, head_dim)."""

from __future__ import annotations

import itertools
import math

import torch
import triton
import triton.language as tl

from tuned_kernels.triton_edge.direct_launch import launch


def attention_configs() -> list[triton.Config]:
    return [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
        for bm, bn, w, s in itertools.product((32, 64, 128), (32, 64), (4, 8), (2, 3))
    ]


@triton.autotune(configs=attention_configs(), key=["SEQ", "HEAD_DIM", "CAUSAL"])
@triton.jit
def attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    sm_scale,
    SEQ,
    stride_bh,
    stride_s,
    HEAD_DIM: tl.constexpr,
    CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    start_m = tl.program_id(0) * BLOCK_M
    base = tl.program_id(1) * stride_bh
    rm = start_m + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + rm[:, None] * stride_s + rd[None, :], mask=rm[:, None] < SEQ, other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # log2(e): exp2 is cheaper than exp
    end_n = tl.minimum(start_m + BLOCK_M, SEQ) if CAUSAL else SEQ
    for start_n in range(0, end_n, BLOCK_N):
        rn = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + base + rn[None, :] * stride_s + rd[:, None], mask=rn[None, :] < SEQ, other=0.0)
        qk = tl.dot(q, k) * qk_scale
        valid = rn[None, :] < SEQ
        if CAUSAL:
            valid = valid & (rm[:, None] >= rn[None, :])
        qk = tl.where(valid, qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + rn[:, None] * stride_s + rd[None, :], mask=rn[:, None] < SEQ, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(
        o_ptr + base + rm[:, None] * stride_s + rd[None, :],
        acc.to(o_ptr.dtype.element_ty),
        mask=rm[:, None] < SEQ,
    )


def attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, out: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax(q @ k^T / sqrt(head_dim)) @ v for (batch, heads, seq, head_dim) tensors, head_dim 16-128,
    in one fused kernel (no seq x seq matrix in memory); `causal` masks keys after each query."""
    if q.dim() != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(
            f"attention: q, k, v must share a (batch, heads, seq, head_dim) shape, got {tuple(q.shape)}"
        )
    batch, heads, seq, head_dim = q.shape
    if head_dim not in (16, 32, 64, 128):
        raise ValueError(f"attention: head_dim must be 16, 32, 64 or 128, got {head_dim}")
    q, k, v = (t.contiguous() for t in (q, k, v))
    o = out if out is not None else torch.empty_like(q)

    grid = lambda meta: (triton.cdiv(seq, meta["BLOCK_M"]), batch * heads)  # noqa: E731
    scale = 1.0 / math.sqrt(head_dim)
    launch(
        attention_kernel,
        grid,
        q,
        k,
        v,
        o,
        scale,
        seq,
        seq * head_dim,
        head_dim,
        HEAD_DIM=head_dim,
        CAUSAL=causal,
    )
    return o


def reference_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    q, k, v = (t.double() for t in (q, k, v))
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        seq = q.shape[-2]
        scores = scores.masked_fill(
            torch.ones(seq, seq, dtype=torch.bool).triu(1).to(q.device), float("-inf")
        )
    return torch.softmax(scores, dim=-1) @ v
