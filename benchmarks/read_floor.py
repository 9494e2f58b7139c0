"""The memory floor of a decode matmul: a kernel that only reads B, the (K, N) operand every
implementation must read whole, timed like the matmuls beside it. With few rows a matmul moves B and little
else, so no implementation can run much faster than this read; cuBLAS's time over it is the most a Triton
kernel could gain on that key. The floor is the fastest of a few read configs (column block, K block, K
split, warps; the winners of a wider sweep on the H100), so it is the fastest read found, not a proof."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import torch
import triton
import triton.language as tl

Timer = Callable[[dict[str, Callable[[], object]]], dict[str, float]]
READ_CONFIGS = tuple(
    {"BLOCK_N": 64, "BLOCK_K": bk, "SPLIT_K": split, "num_warps": warps}
    for bk, split, warps in itertools.product((32, 64), (2, 4, 8), (4, 8))
)


@triton.jit
def read_kernel(b_ptr, sums_ptr, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    """Sums each column of B over one part of K (the sums are stored, so the loads are not optimized away)."""
    column = tl.program_id(0)
    part = tl.program_id(1)
    rn = column * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    steps = tl.cdiv(K, BLOCK_K)
    per_part = tl.cdiv(steps, SPLIT_K)
    first = part * per_part
    last = tl.minimum(first + per_part, steps)
    acc = tl.zeros((BLOCK_K, BLOCK_N), dtype=tl.float32)
    for step in range(first, last):
        k = step * BLOCK_K + rk
        acc += tl.load(b_ptr + k[:, None] * N + rn[None, :]).to(tl.float32)
    tl.store(sums_ptr + part * N + rn, tl.sum(acc, axis=0))


def reader(b: torch.Tensor, config: dict[str, int]) -> Callable[[], object]:
    """One launch reading all of `b` (row-major (K, N)) with `config`: unmasked loads (masks cost time
    here), so N and K must be multiples of the config's blocks; one stage (a pipeline through shared memory
    only slows a plain read)."""
    k, n = b.shape
    if n % config["BLOCK_N"] or k % config["BLOCK_K"]:
        raise ValueError(f"B of shape {tuple(b.shape)} is not a whole number of {config} blocks")
    sums = torch.empty(config["SPLIT_K"] * n, device=b.device, dtype=torch.float32)
    meta = {name: config[name] for name in ("BLOCK_N", "BLOCK_K", "SPLIT_K")}
    grid = (n // config["BLOCK_N"], config["SPLIT_K"])
    return lambda: read_kernel[grid](b, sums, n, k, **meta, num_warps=config["num_warps"], num_stages=1)


def fastest_reader(b: torch.Tensor, time: Timer) -> tuple[Callable[[], object], dict[str, int]]:
    """The read config that `time` (a timer of named calls, e.g. matmul_keys.kernel_us) finds fastest."""
    k, n = b.shape
    candidates = {
        str(i): reader(b, config)
        for i, config in enumerate(READ_CONFIGS)
        if n % config["BLOCK_N"] == 0 and k % config["BLOCK_K"] == 0
    }
    times = time(candidates)
    best = min(times, key=times.__getitem__)
    return candidates[best], READ_CONFIGS[int(best)]
