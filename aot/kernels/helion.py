"""The built-in Helion corpus (`tune --corpus helion`): tuned_kernels.kernels.helion's matmul, softmax and RMS
norm, with the shapes of the built-in Triton corpus: LLM-typical `full` shapes for GPU runners and small
`quick` ones. Each case runs the op, so Helion searches it with its own settings (HELION_AUTOTUNE_EFFORT and
the rest); importing this module imports Helion."""

from __future__ import annotations

from typing import Any

import torch
from tuned_kernels.aot.corpus import Case, Inputs, KernelFamily
from tuned_kernels.aot.kernels.builtin import DTYPES, LLM_NK

from tuned_kernels.kernels import helion as kernels


def _randn(shape: tuple[int, ...], dtype: str, device: Any, gen: Any) -> torch.Tensor:
    return torch.randn(shape, generator=gen, device="cpu", dtype=torch.float32).to(device, DTYPES[dtype])


def _matmul_inputs(case: Case, device: Any, gen: Any) -> Inputs:
    m, n, k, dt = case["M"], case["N"], case["K"], case["dtype"]
    return {"a": _randn((m, k), dt, device, gen) * k**-0.5, "b": _randn((k, n), dt, device, gen)}


def _row_inputs(case: Case, device: Any, gen: Any) -> Inputs:
    rows, n, dt = case["rows"], case["N"], case["dtype"]
    return {"x": _randn((rows, n), dt, device, gen), "w": _randn((n,), dt, device, gen)}


def _rms_norm_reference(i: Inputs) -> torch.Tensor:
    x: torch.Tensor = i["x"].double()
    w: torch.Tensor = i["w"].double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w


MATMUL_CASES = {
    "quick": [Case.of(M=m, N=512, K=512, dtype="float16") for m in (64, 512)],
    "full": [
        Case.of(M=m, N=n, K=k, dtype=dt)
        for dt in ("float16", "bfloat16")
        for n, k in LLM_NK[:3]
        for m in (16, 256, 4096)
    ],
}
ROW_CASES = {
    "quick": [Case.of(rows=256, N=n, dtype="float16") for n in (1024, 4096)],
    "full": [
        Case.of(rows=r, N=n, dtype=dt)
        for dt in ("float16", "bfloat16")
        for n in (2048, 4096, 8192)
        for r in (16, 4096)
    ],
}

CORPUS: tuple[KernelFamily, ...] = (
    KernelFamily(
        name="helion_matmul",
        kernel=kernels.matmul,
        make_inputs=_matmul_inputs,
        run=lambda i: kernels.matmul(i["a"], i["b"]),
        reference=lambda i: i["a"].double() @ i["b"].double(),
        tolerance=(2e-2, 1e-2),
        shapes=MATMUL_CASES,
    ),
    KernelFamily(
        name="helion_softmax",
        kernel=kernels.softmax,
        make_inputs=_row_inputs,
        run=lambda i: kernels.softmax(i["x"]),
        reference=lambda i: torch.softmax(i["x"].double(), dim=-1),
        tolerance=(1e-3, 1e-2),
        shapes=ROW_CASES,
    ),
    KernelFamily(
        name="helion_rms_norm",
        kernel=kernels.rms_norm,
        make_inputs=_row_inputs,
        run=lambda i: kernels.rms_norm(i["x"], i["w"]),
        reference=_rms_norm_reference,
        tolerance=(2e-2, 1e-2),
        shapes=ROW_CASES,
    ),
)
