"""The keys the `predict` step tunes: per family, a training set (what a bundle would hold) and 20 held-out
keys it never saw, between and beyond the training ones. Every key is tuned to the end, every config's time
kept, so each held-out key's per-shape winner and the time of any config there are known.

Families: the built-in matmul (the kernel its op launches on this GPU: the copy-engine one on Hopper, else
the tile one), matmul + bias + SiLU, softmax and RMS norm, and two programs written elsewhere: the matmul
as Triton's tutorial writes it (benchmarks/miss.py) and fla-core's RMS norm (its row kernel, launched by
the library's own `rms_norm`). Matmul keys vary M (N, K = 4096, 4096; 14336, 4096 with the epilogue); row
keys vary N (fla's: D) over 4,096 rows."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import torch
from tuned_kernels.aot.corpus import Case, KernelFamily
from tuned_kernels.aot.kernels.builtin import CORPUS as BUILTIN

# the training keys: powers of two, as a bundle's shape list would give them (vLLM's batch sizes are such)
TRAIN_M = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
HELD_OUT_M = (32, 48, 80, 96, 160, 200, 300, 384, 640, 700,
              1000, 1536, 2500, 3000, 3072, 5000, 6144, 10000, 12288, 16384)  # fmt: skip
# where the built-in matmul's op launches its copy-engine kernel (Hopper), M = 32 and 48 run another: two more
HELD_OUT_M_MORE = (120, 4608)
# and, for the row kernels, a few widths not divisible by 16, which Triton compiles otherwise (its loads are
# not known aligned), so a bundle holds keys of both kinds (the matmul keys: powers of two alone)
TRAIN_N = (256, 512, 1024, 2048, 4096, 8192, 16384, 1000, 3000, 7000, 13000)
HELD_OUT_N = (200, 300, 640, 768, 1280, 1536, 1800, 2200, 2500, 3072,
              4500, 5000, 6144, 9000, 10000, 11000, 12000, 12288, 14336, 15000)  # fmt: skip
# (the row kernels' largest block is 16384: a larger N has no valid config)
# fla launches its row kernel above a width of 512 only: two held-out widths there stand in for 200 and 300
FLA_HELD_OUT_D = (520, 900, *(n for n in HELD_OUT_N if n > 512))
NK = ((4096, 4096),)
ROW_KERNELS = (".rowwise.", ".layer_norm_fwd_kernel_row")  # kernels whose key's first element is the width


def training(kernel: str, key: tuple[Any, ...]) -> bool:
    """Whether this kernel's key is in the training set (its first element: N for the row kernels, else M)."""
    return key[0] in (TRAIN_N if any(k in kernel for k in ROW_KERNELS) else TRAIN_M)


def _matmul_cases(nk: tuple[tuple[int, int], ...], more: tuple[int, ...] = (), **extra: str) -> list[Case]:
    ms = (*TRAIN_M, *HELD_OUT_M, *more)
    return [Case.of(M=m, N=n, K=k, dtype="float16", **extra) for n, k in nk for m in ms]


def _tutorial_inputs(case: Case, device: Any, gen: Any) -> dict[str, Any]:
    m, n, k = case["M"], case["N"], case["K"]
    a = (torch.randn((m, k), generator=gen, device="cpu") * k**-0.5).to(device=device, dtype=torch.float16)
    b = torch.randn((k, n), generator=gen, device="cpu").to(device=device, dtype=torch.float16)
    return {"a": a, "b": b}


def _tutorial() -> KernelFamily:
    sys.path.insert(0, str(Path(__file__).parent))  # loaded by path, as `tune --corpus` loads it
    from miss import tutorial_matmul, tutorial_matmul_kernel

    return KernelFamily(
        name="tutorial_matmul",
        kernel=tutorial_matmul_kernel,
        make_inputs=_tutorial_inputs,
        run=lambda i: tutorial_matmul(i["a"], i["b"]),
        reference=lambda i: i["a"].double() @ i["b"].double(),
        tolerance=(2e-2, 1e-2),
        shapes={"full": _matmul_cases(NK)},
    )


def _fla_inputs(case: Case, device: Any, gen: Any) -> dict[str, Any]:
    x = torch.randn((case["rows"], case["D"]), generator=gen, device="cpu").to(device, torch.float16)
    return {"x": x, "w": torch.randn(case["D"], generator=gen, device="cpu").to(device, torch.float16)}


def _fla_reference(i: dict[str, Any]) -> Any:
    x = i["x"].double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * i["w"].double()


def _fla_rms_norm() -> KernelFamily:
    from fla.modules.layernorm import rms_norm
    from fla.modules.norm.layernorm import layer_norm_fwd_kernel_row

    widths = (*(n for n in TRAIN_N if n > 512), *FLA_HELD_OUT_D)
    return KernelFamily(
        name="fla_rms_norm",
        kernel=layer_norm_fwd_kernel_row,
        make_inputs=_fla_inputs,
        run=lambda i: rms_norm(i["x"], i["w"], None, eps=1e-6),
        reference=_fla_reference,
        tolerance=(2e-2, 1e-2),
        shapes={"full": [Case.of(rows=4096, D=d, dtype="float16") for d in widths]},
    )


def _families() -> list[KernelFamily]:
    hopper = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
    matmul = "matmul_tma" if hopper else "matmul"
    by_name = {f.name: f for f in BUILTIN}
    rows = [Case.of(rows=4096, N=n, dtype="float16") for n in (*TRAIN_N, *HELD_OUT_N)]
    return [
        dataclasses.replace(
            by_name[matmul], shapes={"full": _matmul_cases(NK, HELD_OUT_M_MORE if hopper else ())}
        ),
        dataclasses.replace(
            by_name["matmul_bias_act"],
            shapes={"full": _matmul_cases(((14336, 4096),), act="silu")},
        ),
        dataclasses.replace(by_name["softmax"], shapes={"full": rows}),
        dataclasses.replace(by_name["rms_norm"], shapes={"full": rows}),
        _tutorial(),
        _fla_rms_norm(),
    ]


CORPUS = _families()
