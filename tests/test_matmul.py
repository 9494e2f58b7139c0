"""The Triton matmul through Triton's interpreter: the split-K kernel for up to 64 rows (every split its
pruned space allows), the tile kernel above, and shapes with nothing to compute."""

from __future__ import annotations

import pytest
import torch
from tuned_kernels.aot.kernels import matmul, skinny_matmul

from tuned_kernels.triton_edge.launch import forced_config


def operands(m: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(m * 1000 + n + k)
    a = torch.randn(m, k, generator=gen).half() * max(k, 1) ** -0.5
    return a, torch.randn(k, n, generator=gen).half()


@pytest.mark.parametrize(("m", "n", "k"), [(1, 64, 512), (16, 80, 520), (5, 40, 300)])
def test_every_split_of_the_skinny_kernel_matches_and_leaves_its_counters_at_zero(
    m: int, n: int, k: int
) -> None:
    a, b = operands(m, n, k)
    space = skinny_matmul.prune_skinny(skinny_matmul.skinny_configs(), {"M": m, "N": n, "K": k})
    assert {c.kwargs["SPLIT_K"] for c in space} >= {1, 2}
    for config in space:
        c = torch.full((m, n), float("nan"), dtype=torch.float16)
        with forced_config(skinny_matmul.matmul_skinny_kernel, config):
            for _ in range(2):  # the second launch finds the counters the first reset
                skinny_matmul.skinny_matmul(a, b, c, m, n, k)
        assert (c.double() - a.double() @ b.double()).abs().max() < 2e-2, config
    assert all(int(counts.abs().sum()) == 0 for _, counts in skinny_matmul._workspaces.values())


def test_no_config_of_any_shape_needs_more_partial_sums_than_the_workspace_holds() -> None:
    for m in (1, 7, 16, 33, 64):
        for n in (1, 4096, 28672):
            space = skinny_matmul.prune_skinny(skinny_matmul.skinny_configs(), {"M": m, "N": n, "K": 8192})
            skinny_matmul._workspaces.clear()  # measure this shape's own, not a larger one kept from before
            partial, _ = skinny_matmul.workspace(torch.empty(0), m, n)
            assert all(m * n * c.kwargs["SPLIT_K"] <= partial.numel() for c in space)
    skinny_matmul._workspaces.clear()


@pytest.mark.parametrize(("m", "n", "k"), [(0, 64, 64), (16, 0, 64), (16, 64, 0), (96, 64, 0), (80, 48, 64)])
def test_triton_matmul_handles_empty_operands_and_the_tile_kernel(m: int, n: int, k: int) -> None:
    a, b = operands(m, n, k)
    tile, skinny = matmul.matmul_configs()[0], skinny_matmul.skinny_configs()[0]  # nothing timed on the CPU
    with forced_config(matmul.matmul_kernel, tile), forced_config(skinny_matmul.matmul_skinny_kernel, skinny):
        c = matmul.triton_matmul(a, b)
    assert c.shape == (m, n) and torch.allclose(c.double(), a.double() @ b.double(), atol=2e-2)
