"""Matmul through the tensor memory accelerator (TMA) of NVIDIA Hopper and later: persistent programs,
tiles loaded and stored by the copy engine through tensor descriptors.

At most one program per SM walks the output tiles (grouped GROUP_M rows of tiles at a time, so the B tiles
they share stay in L2); A and B tiles arrive by the copy engine into a pipeline `num_stages` deep and feed
the tensor cores, and C leaves through a descriptor too, in two halves with EPILOGUE_SPLIT (half the store
buffer, so a deeper pipeline fits). Edges need no masks: the copy engine fills loads past an edge with
zeros and clips stores. FLATTEN lets Triton pipeline across tiles (a tile's first loads overlap the one
before's store).

`triton_matmul` uses it for more than SKINNY_M rows where the GPU has the copy engine and the operands suit
it (`fits`); elsewhere the tile kernel in matmul.py.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from tuned_kernels.triton_edge.direct_launch import launch
from tuned_kernels.triton_edge.tma import copy_engine

SHARED_MEMORY = 232448 - 1024  # Hopper's shared memory per program, as Triton counts it, less a margin
TILES = ((128, 256, 64), (128, 128, 64), (64, 256, 64), (64, 128, 128), (128, 64, 128))  # (M, N, K)
DTYPES = (torch.float16, torch.bfloat16)


def shared_bytes(bm: int, bn: int, bk: int, stages: int, split: bool) -> int:
    """A config's shared memory: its pipelined A and B tiles and the store buffer (16-bit elements)."""
    return stages * (bm + bn) * bk * 2 + bm * bn * 2 // (2 if split else 1)


def set_block_shapes(nargs: dict[str, Any]) -> None:
    """A config's pre-hook: the descriptors' block shapes are its tiles."""
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bk, bn]
    nargs["c_desc"].block_shape = [bm, bn // 2 if nargs["EPILOGUE_SPLIT"] else bn]


def tma_configs() -> list[triton.Config]:
    """Every tile, split and flattened or not, with the two deepest pipelines (of 3 to 5) that fit; 8 warps
    for the largest tile, 4 for the rest (measured on an H100: 8 only pays at 128 x 256)."""
    configs = []
    for (bm, bn, bk), split, flatten in itertools.product(TILES, (False, True), (True, False)):
        if split and bn < 128:
            continue
        stages = [s for s in (5, 4, 3) if shared_bytes(bm, bn, bk, s, split) <= SHARED_MEMORY][:2]
        for s in stages:
            meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}
            meta.update(EPILOGUE_SPLIT=split, FLATTEN=flatten)
            warps = 8 if bm * bn >= 128 * 256 else 4
            configs.append(triton.Config(meta, num_warps=warps, num_stages=s, pre_hook=set_block_shapes))
    return configs


@triton.autotune(configs=tma_configs(), key=["M", "N", "K", "DTYPE"])
@triton.jit
def matmul_tma_kernel(
    a_desc,
    b_desc,
    c_desc,
    M,
    N,
    K,
    DTYPE: tl.constexpr,  # the operands' dtype, for the tuning key (descriptors give the key none)
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EPILOGUE_SPLIT: tl.constexpr,
    FLATTEN: tl.constexpr,
):
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    for tile in tl.range(tl.program_id(0), num_m * num_n, tl.num_programs(0), flatten=FLATTEN):
        first_m = (tile // group) * GROUP_M
        group_m = min(num_m - first_m, GROUP_M)
        off_m = (first_m + (tile % group) % group_m) * BLOCK_M
        off_n = ((tile % group) // group_m) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([off_m, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)
        if EPILOGUE_SPLIT:
            left, right = acc.reshape(BLOCK_M, 2, BLOCK_N // 2).permute(0, 2, 1).split()
            c_desc.store([off_m, off_n], left.to(c_desc.dtype))
            c_desc.store([off_m, off_n + BLOCK_N // 2], right.to(c_desc.dtype))
        else:
            c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


def _suits(t: torch.Tensor) -> bool:
    """A 2-D operand the copy engine can address: unit column stride, rows and base 16-byte aligned."""
    row_bytes = t.stride(0) * t.element_size()
    return t.stride(1) == 1 and t.stride(0) >= t.shape[1] and row_bytes % 16 == 0 and t.data_ptr() % 16 == 0


def fits(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, k: int) -> bool:
    """Whether `tma_matmul` can compute c = a @ b here: 16-bit floats of one dtype, operands the copy engine
    can address, a GPU that has one (`copy_engine`), and a K to loop over."""
    return (
        k > 0
        and a.dtype in DTYPES
        and a.dtype == b.dtype == c.dtype
        and _suits(a)
        and _suits(b)
        and _suits(c)
        and copy_engine(a)
    )


_programs: dict[int, int] = {}


def _program_count(like: torch.Tensor) -> int:
    """One program per SM of `like`'s GPU (4 for the interpreter's CPU tensors)."""
    index = like.get_device()
    if index not in _programs:
        sms = torch.cuda.get_device_properties(index).multi_processor_count if index >= 0 else 4
        _programs[index] = sms
    return _programs[index]


def _descriptor(t: torch.Tensor, rows: int, columns: int) -> TensorDescriptor:
    """A descriptor over `t`; its block shape is a placeholder until the config's pre-hook sets it."""
    return TensorDescriptor(t, [rows, columns], [t.stride(0), 1], [16, 16])


def tma_matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, m: int, n: int, k: int) -> None:
    """c = a @ b; the caller has checked `fits`."""
    programs = _program_count(a)

    def grid(meta: dict[str, Any]) -> tuple[int]:
        return (min(programs, triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"])),)

    descriptors = (_descriptor(a, m, k), _descriptor(b, k, n), _descriptor(c, m, n))
    launch(matmul_tma_kernel, grid, *descriptors, m, n, k, DTYPE=str(a.dtype))
