"""The Triton matmul through Triton's interpreter: the split-K kernel for up to 64 rows (every split its
pruned space allows), the copy engine's kernel (every config) and where triton_matmul may use it, the tile
kernel, and shapes with nothing to compute."""

from __future__ import annotations

import pytest
import torch
from tuned_kernels.hardware.archs import triton_target_of

from tuned_kernels.kernels import matmul, skinny_matmul, tma_matmul
from tuned_kernels.triton_edge import compiler_facts
from tuned_kernels.triton_edge.compile import compiling_for
from tuned_kernels.triton_edge.launch import LaunchesAnother, forced_config, probe_launch


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


@pytest.mark.parametrize(("m", "n", "k"), [(200, 72, 40), (65, 264, 136)])
def test_every_config_of_the_copy_engine_kernel_matches_on_shapes_with_ragged_edges(
    m: int, n: int, k: int
) -> None:
    a, b = operands(m, n, k)
    assert tma_matmul.fits(a, b, a.new_empty(m, n), k) is False  # a CPU tensor: called directly below
    for config in tma_matmul.tma_configs():
        c = torch.full((m, n), float("nan"), dtype=torch.float16)
        with forced_config(tma_matmul.matmul_tma_kernel, config):
            tma_matmul.tma_matmul(a, b, c, m, n, k)
        assert (c.double() - a.double() @ b.double()).abs().max() < 2e-2, config


def test_every_config_of_the_copy_engine_kernel_fits_hoppers_shared_memory() -> None:
    configs = tma_matmul.tma_configs()
    assert len({repr(c) for c in configs}) == len(configs) > 20
    for c in configs:
        kw = c.kwargs
        need = tma_matmul.shared_bytes(
            kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], c.num_stages, kw["EPILOGUE_SPLIT"]
        )
        assert need <= tma_matmul.SHARED_MEMORY and c.pre_hook is tma_matmul.set_block_shapes


def meta_operands(m: int, n: int, k: int, dtype: torch.dtype = torch.float16) -> tuple[torch.Tensor, ...]:
    return tuple(torch.empty(shape, device="meta", dtype=dtype) for shape in ((m, k), (k, n), (m, n)))


def test_the_copy_engine_kernel_is_used_only_where_the_gpu_has_one_and_the_operands_suit_it() -> None:
    hopper = compiler_facts.gpu_target(*triton_target_of("sm90"))
    ampere = compiler_facts.gpu_target(*triton_target_of("sm80"))
    a, b, c = meta_operands(256, 4096, 4096)
    with compiling_for(ampere):
        assert not tma_matmul.fits(a, b, c, 4096)
    with compiling_for(hopper):
        assert tma_matmul.fits(a, b, c, 4096)
        assert not tma_matmul.fits(*meta_operands(256, 4095, 4096), 4096)  # rows not 16-byte aligned
        assert not tma_matmul.fits(*meta_operands(256, 4096, 4096, torch.float32), 4096)
        assert not tma_matmul.fits(a, b.t(), c, 4096)  # columns not contiguous
        assert not tma_matmul.fits(*meta_operands(256, 4096, 0), 0)  # no K to loop over
    assert not tma_matmul.fits(*(torch.empty(t.shape, dtype=t.dtype) for t in (a, b, c)), 4096)  # CPU


def test_probing_a_kernel_its_op_does_not_launch_here_says_so_and_runs_nothing() -> None:
    a, b, c = meta_operands(256, 512, 512)
    with compiling_for(compiler_facts.gpu_target(*triton_target_of("sm90"))):
        named = probe_launch(tma_matmul.matmul_tma_kernel, lambda: matmul.triton_matmul(a, b, out=c))
        with pytest.raises(LaunchesAnother, match="launches matmul_tma_kernel here instead"):
            probe_launch(matmul.matmul_kernel, lambda: matmul.triton_matmul(a, b, out=c))
    assert (named["M"], named["N"], named["K"], named["DTYPE"]) == (256, 512, 512, "torch.float16")
    with pytest.raises(LaunchesAnother, match="launches matmul_kernel here instead"):  # no copy engine
        probe_launch(tma_matmul.matmul_tma_kernel, lambda: matmul.triton_matmul(a, b, out=c))


def test_a_probe_with_shape_only_operands_leaves_no_workspace_for_real_launches() -> None:
    a, b, c = meta_operands(16, 64, 256)
    probe_launch(skinny_matmul.matmul_skinny_kernel, lambda: matmul.triton_matmul(a, b, out=c))
    assert not any(p.is_meta or n.is_meta for p, n in skinny_matmul._workspaces.values())
    a, b = operands(16, 64, 256)
    with forced_config(skinny_matmul.matmul_skinny_kernel, skinny_matmul.skinny_configs()[0]):
        assert torch.allclose(matmul.triton_matmul(a, b).double(), a.double() @ b.double(), atol=2e-2)
