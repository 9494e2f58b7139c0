"""Matmul for skinny M (decode: at most `SKINNY_M` rows), split over K.

With few rows, a tile per (M, N) block leaves most of a big GPU idle: 4096 columns in 128-wide tiles are
32 programs for 132 SMs, so the kernel cannot pull B from memory at full speed. Here each tile's K range is
cut into `SPLIT_K` parts run by separate programs; each writes its fp32 partial sum to a workspace, and the
last of a tile's programs to arrive (counted by an atomic counter, which it resets for the next launch) adds
the parts and stores the tile. One launch, no memset, no second reduction kernel.

The workspace (partial sums and counters) is kept per device and CUDA stream, so launches that may overlap
never share one; configs whose partial sums would not fit it are pruned, so no config (a bundle's included:
served configs must be in the pruned space) can write past it.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch
import triton
import triton.language as tl

from tuned_kernels.triton_edge.direct_launch import current_stream, launch

SKINNY_M = 64  # rows up to this go to the split-K kernel
SPLITS = (1, 2, 4, 8, 16)
PARTIAL_LIMIT = 1 << 23  # fp32 partial sums one launch may use (32 MiB), bounding the workspace
SMEM_LIMIT = 200 * 1024  # bytes of pipelined A and B tiles (Hopper has 227 KiB per SM)
MIN_BLOCK_M, MIN_BLOCK_N = 16, 32


def block_m_for(m: int) -> int:
    """The tile height for `m` rows: the next power of two, at least 16 (tl.dot's minimum)."""
    return max(MIN_BLOCK_M, 1 << max(m - 1, 0).bit_length())


def max_split(m: int, n: int) -> int:
    """The largest split (a power of two, at most 16) whose partial sums fit the workspace bound."""
    fits = PARTIAL_LIMIT // max(m * n, 1)
    return min(SPLITS[-1], 1 << (fits.bit_length() - 1)) if fits else 1


def skinny_configs() -> list[triton.Config]:
    """Every tile and split, each with the deepest pipeline (up to 4 stages) that fits shared memory:
    skinny products are memory-bound, so loads in flight matter more than warps."""
    configs = []
    for bm, bn, bk, split in itertools.product((16, 32, 64), (32, 64, 128), (64, 128, 256), SPLITS):
        stages = min(4, SMEM_LIMIT // ((bm + bn) * bk * 2))
        if stages >= 2:
            meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "SPLIT_K": split}
            configs.append(triton.Config(meta, num_warps=8 if bm * bn >= 64 * 128 else 4, num_stages=stages))
    return configs


def prune_skinny(
    configs: list[triton.Config], named_args: dict[str, Any], **kwargs: Any
) -> list[triton.Config]:
    """Tiles as tall as M needs and splits that fit the workspace and leave each part at least two K steps."""
    m, n, k = (int(named_args[name]) for name in ("M", "N", "K"))
    height, most = min(block_m_for(m), 64), max_split(m, n)
    kept = []
    for config in configs:
        bm, bk, split = (config.kwargs[name] for name in ("BLOCK_M", "BLOCK_K", "SPLIT_K"))
        if bm == height and split <= most and (split == 1 or triton.cdiv(k, bk) >= 2 * split):
            kept.append(config)
    return kept or configs[:1]


@triton.autotune(
    configs=skinny_configs(), key=["M", "N", "K"], prune_configs_by={"early_config_prune": prune_skinny}
)
@triton.jit
def matmul_skinny_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    partial_ptr,
    count_ptr,
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
    SPLIT_K: tl.constexpr,
):
    tile = tl.program_id(0)
    part = tl.program_id(1)
    num_n = tl.cdiv(N, BLOCK_N)
    rm = (tile // num_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (tile % num_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    steps = tl.cdiv(K, BLOCK_K)
    per_part = tl.cdiv(steps, SPLIT_K)
    first = part * per_part
    last = tl.minimum(first + per_part, steps)
    # rows and columns past the edge wrap round (their results are never stored): loads mask only on K
    a_ptrs = a_ptr + (rm % M)[:, None] * stride_am + (first * BLOCK_K + rk)[None, :] * stride_ak
    b_ptrs = b_ptr + (first * BLOCK_K + rk)[:, None] * stride_bk + (rn % N)[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(first, last):
        k_left = K - step * BLOCK_K
        a = tl.load(a_ptrs, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    in_c = (rm[:, None] < M) & (rn[None, :] < N)
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    if SPLIT_K == 1:
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=in_c)
    else:
        # partial sums laid out [SPLIT_K, M, N]; every thread's stores before the one counting atomic
        at = rm[:, None] * N + rn[None, :]
        tl.store(partial_ptr + part * M * N + at, acc, mask=in_c)
        tl.debug_barrier()
        arrived = tl.atomic_add(count_ptr + tile, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT_K - 1:  # the tile's last part: add them all, store, reset the counter
            total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for p in tl.static_range(SPLIT_K):
                total += tl.load(partial_ptr + p * M * N + at, mask=in_c, other=0.0, cache_modifier=".cg")
            tl.store(c_ptrs, total.to(c_ptr.dtype.element_ty), mask=in_c)
            tl.atomic_xchg(count_ptr + tile, 0, sem="relaxed", scope="gpu")


_workspaces: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor]] = {}


def workspace(like: torch.Tensor, m: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Partial sums and zeroed tile counters big enough for any config of the pruned space, for launches
    on `like`'s device and its current stream (grown, never shrunk; a smaller one goes back to torch's
    allocator, which is stream-ordered)."""
    partial_need = m * n * max_split(m, n)
    count_need = -(-m // MIN_BLOCK_M) * -(-n // MIN_BLOCK_N)
    if like.is_meta:  # a probe's launch, shapes only: nothing runs, nothing is kept for later launches
        partial = like.new_empty(partial_need, dtype=torch.float32)
        return partial, like.new_empty(count_need, dtype=torch.int32)
    index = like.get_device()  # -1: a CPU tensor (Triton's interpreter)
    key = (index, current_stream(index) if index >= 0 else 0)
    found = _workspaces.get(key)
    if found is None or found[0].numel() < partial_need or found[1].numel() < count_need:
        have = (0, 0) if found is None else (found[0].numel(), found[1].numel())
        found = (
            torch.empty(max(partial_need, have[0]), device=like.device, dtype=torch.float32),
            torch.zeros(max(count_need, have[1]), device=like.device, dtype=torch.int32),
        )
        _workspaces[key] = found
    return found


def _grid(meta: dict[str, Any]) -> tuple[int, int]:
    tiles = triton.cdiv(meta["M"], meta["BLOCK_M"]) * triton.cdiv(meta["N"], meta["BLOCK_N"])
    return (tiles, meta["SPLIT_K"])


def skinny_matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, m: int, n: int, k: int) -> None:
    partial, counts = workspace(a, m, n)
    launch(
        matmul_skinny_kernel,
        _grid,
        a,
        b,
        c,
        partial,
        counts,
        m,
        n,
        k,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
    )
