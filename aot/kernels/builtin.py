"""The built-in corpus: matmul (fp16, bf16), fused matmul + bias + activation, softmax, layer norm, RMS
norm and attention forward: LLM-typical `full` shapes for GPU runners, tiny `quick` ones for the CPU."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from tuned_kernels.aot.corpus import Case, Inputs, KernelFamily

from tuned_kernels.kernels import attention, matmul, rowwise, tma_matmul
from tuned_kernels.kernels.skinny_matmul import SKINNY_M, matmul_skinny_kernel

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
# (N, K) pairs from real models (Llama-3 8B / 70B projections), M from decode (1) to long prefill (8192)
LLM_NK = ((4096, 4096), (14336, 4096), (4096, 14336), (6144, 4096), (8192, 8192), (28672, 8192))
LLM_M = (1, 16, 64, 256, 1024, 4096, 8192)


def _randn(shape: tuple[int, ...], dtype: str, device: Any, gen: Any, scale: float = 1.0) -> torch.Tensor:
    """Normal samples times `scale`, made on `device` (a GPU makes 235M of them in milliseconds, the CPU in
    seconds), from a seed drawn from `gen`: the same inputs for the same seed on one kind of device."""
    if str(device) == "meta":  # shapes only, for probing keys and compiling ahead of time; no arithmetic:
        return torch.empty(shape, device="meta", dtype=DTYPES[dtype])  # a meta op imports torch._dynamo
    seed = int(torch.randint(2**62, (1,), generator=gen))
    on_device = torch.Generator(device=device).manual_seed(seed)
    samples = torch.randn(shape, generator=on_device, device=device, dtype=torch.float32)
    return (samples * scale if scale != 1.0 else samples).to(DTYPES[dtype])


def _poisoned(shape: tuple[int, ...], dtype: str, device: Any) -> torch.Tensor:
    """Outputs start as NaN, so an element the kernel never writes fails the check."""
    return torch.full(shape, float("nan"), device=device, dtype=DTYPES[dtype])


def _matmul_inputs(case: Case, device: Any, gen: Any) -> Inputs:
    m, n, k, dt = case["M"], case["N"], case["K"], case["dtype"]
    scale = k**-0.5  # keeps outputs O(1) so fp16 tolerances mean the same at every K
    return {
        "a": _randn((m, k), dt, device, gen, scale),
        "b": _randn((k, n), dt, device, gen),
        "bias": _randn((n,), dt, device, gen),
        "activation": dict(case.params).get("act", "none"),
        "out": _poisoned((m, n), dt, device),
    }


def _matmul_cases(dtypes: tuple[str, ...], full: bool, **extra: str) -> list[Case]:
    if not full:
        return [
            Case.of(M=m, N=n, K=k, dtype=dt, **extra)
            for dt in dtypes
            for m, n, k in ((16, 64, 256), (96, 80, 64))
        ]
    return [Case.of(M=m, N=n, K=k, dtype=dt, **extra) for dt in dtypes for n, k in LLM_NK for m in LLM_M]


def _row_inputs(case: Case, device: Any, gen: Any) -> Inputs:
    rows, n, dt = case["rows"], case["N"], case["dtype"]
    return {
        "x": _randn((rows, n), dt, device, gen),
        "w": _randn((n,), dt, device, gen),
        "b": _randn((n,), dt, device, gen),
        "out": _poisoned((rows, n), dt, device),
    }


def _row_cases(full: bool) -> list[Case]:
    if not full:
        return [Case.of(rows=4, N=n, dtype="float16") for n in (200, 1000)]
    return [
        Case.of(rows=r, N=n, dtype=dt)
        for dt in ("float16", "bfloat16")
        for n in (1024, 4096, 8192, 14336)
        for r in (16, 4096)
    ]


def _attention_inputs(case: Case, device: Any, gen: Any) -> Inputs:
    shape = (case["batch"], case["heads"], case["seq"], case["head_dim"])
    dt = case["dtype"]
    return {
        "q": _randn(shape, dt, device, gen),
        "k": _randn(shape, dt, device, gen),
        "v": _randn(shape, dt, device, gen),
        "causal": case["causal"],
        "out": _poisoned(shape, dt, device),
    }


def _attention_cases(full: bool) -> list[Case]:
    if not full:
        return [
            Case.of(batch=1, heads=2, seq=64, head_dim=32, causal=c, dtype="float16") for c in (False, True)
        ]
    return [
        Case.of(batch=b, heads=32, seq=s, head_dim=128, causal=c, dtype=dt)
        for dt in ("float16", "bfloat16")
        for c in (False, True)
        for b, s in ((1, 1024), (1, 4096), (4, 2048))
    ]


def _layer_norm_ref(i: Inputs) -> torch.Tensor:
    x = i["x"].double()
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), i["w"].double(), i["b"].double(), 1e-5)


def _rms_norm_ref(i: Inputs) -> torch.Tensor:
    x = i["x"].double()
    result: torch.Tensor = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * i["w"].double()
    return result


def by_kernel(shapes: Mapping[str, Sequence[Case]], skinny: bool) -> dict[str, list[Case]]:
    """The matmul cases of each shape set that triton_matmul runs on its split-K kernel (skinny: at most
    SKINNY_M rows) or on one of its kernels for more rows (the copy engine's where the GPU has one, else
    the tile kernel's: the tuner tunes each case for the kernel its op launches on the GPU at hand)."""
    return {name: [c for c in cases if (c["M"] <= SKINNY_M) == skinny] for name, cases in shapes.items()}


def _matmul_family(name: str, kernel: Any, run: Any, skinny: bool | None = None) -> KernelFamily:
    """`skinny`: only the cases that launch `kernel` (None: every case, for the implementation choice)."""
    shapes = {
        "quick": _matmul_cases(("float16",), False),
        "full": _matmul_cases(("float16", "bfloat16"), True),
    }
    return KernelFamily(
        name=name,
        kernel=kernel,
        make_inputs=_matmul_inputs,
        run=run,
        reference=lambda i: i["a"].double() @ i["b"].double(),
        tolerance=(2e-2, 1e-2),
        # bf16 only on GPU runners: Triton 3.9's interpreter returns garbage for bf16 dot (seen: errors ~1e10)
        shapes=shapes if skinny is None else by_kernel(shapes, skinny),
    )


def _row_family(
    name: str, kernel: Any, run: Any, reference: Any, tolerance: tuple[float, float] = (2e-2, 1e-2)
) -> KernelFamily:
    return KernelFamily(
        name=name,
        kernel=kernel,
        make_inputs=_row_inputs,
        run=run,
        reference=reference,
        tolerance=tolerance,
        shapes={"quick": _row_cases(False), "full": _row_cases(True)},
    )


CORPUS: tuple[KernelFamily, ...] = (
    _matmul_family(
        "matmul",
        matmul.matmul_kernel,
        lambda i: matmul.triton_matmul(i["a"], i["b"], out=i["out"]),
        skinny=False,
    ),
    _matmul_family(
        "matmul_skinny",
        matmul_skinny_kernel,
        lambda i: matmul.triton_matmul(i["a"], i["b"], out=i["out"]),
        skinny=True,
    ),
    _matmul_family(
        "matmul_tma",
        tma_matmul.matmul_tma_kernel,
        lambda i: matmul.triton_matmul(i["a"], i["b"], out=i["out"]),
        skinny=False,
    ),
    # after the matmul kernels' families: the choice's Triton implementation uses the configs tuned there
    _matmul_family(
        "matmul_impl", matmul.MATMUL_CHOICE, lambda i: matmul.matmul(i["a"], i["b"], out=i["out"])
    ),
    KernelFamily(
        name="matmul_bias_act",
        kernel=matmul.matmul_bias_act_kernel,
        make_inputs=_matmul_inputs,
        run=lambda i: matmul.matmul_bias_act(i["a"], i["b"], i["bias"], i["activation"], out=i["out"]),
        reference=lambda i: matmul.reference_bias_act(i["a"], i["b"], i["bias"], i["activation"]),
        tolerance=(2e-2, 1e-2),
        shapes={
            "quick": _matmul_cases(("float16",), False, act="gelu")[:1],
            "full": [c for c in _matmul_cases(("float16",), True, act="silu") if c["N"] in (14336, 28672)],
        },
    ),
    _row_family(
        "softmax",
        rowwise.softmax_kernel,
        lambda i: rowwise.softmax(i["x"], out=i["out"]),
        lambda i: torch.softmax(i["x"].double(), dim=-1),
        tolerance=(1e-3, 1e-2),
    ),
    _row_family(
        "layer_norm",
        rowwise.layer_norm_kernel,
        lambda i: rowwise.layer_norm(i["x"], i["w"], i["b"], 1e-5, out=i["out"]),
        _layer_norm_ref,
    ),
    _row_family(
        "rms_norm",
        rowwise.rms_norm_kernel,
        lambda i: rowwise.rms_norm(i["x"], i["w"], 1e-6, out=i["out"]),
        _rms_norm_ref,
    ),
    KernelFamily(
        name="attention",
        kernel=attention.attention_kernel,
        make_inputs=_attention_inputs,
        run=lambda i: attention.attention(i["q"], i["k"], i["v"], i["causal"], out=i["out"]),
        reference=lambda i: attention.reference_attention(i["q"], i["k"], i["v"], i["causal"]),
        tolerance=(2e-2, 1e-2),
        shapes={"quick": _attention_cases(False), "full": _attention_cases(True)},
    ),
)
