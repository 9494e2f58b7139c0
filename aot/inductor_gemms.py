"""`python -m tuned_kernels.aot.inductor_gemms [--shapes full|quick] [--shard I/N] [--dtypes ...]`: the built-in
corpus's GEMM shapes (Llama-3 projections, M from decode to long prefill; fp16 and bf16) run through
`torch.compile(mode="max-autotune")` as `nn.Linear` layers without bias compute them, one graph per shape.
Run under `tuned-kernels capture`, it records Inductor's choices for all of them, so a bundle serves
max-autotune users with no capture of their own:

    tuned-kernels capture -o inductor-sm90.pb.zst -- python -m tuned_kernels.aot.inductor_gemms --shapes full
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

GEMM = tuple[int, int, int, str]  # M, N, K, dtype


def gemms(shapes: str, dtypes: Sequence[str]) -> list[GEMM]:
    from tuned_kernels.aot.kernels.builtin import LLM_M, LLM_NK

    if shapes == "quick":
        return [(m, n, k, dt) for dt in dtypes for m, n, k in ((16, 64, 64), (96, 80, 64))]
    return [(m, n, k, dt) for dt in dtypes for n, k in LLM_NK for m in LLM_M]


def run(gemm: GEMM, device: str) -> float:
    """Compiles and runs one linear layer (fresh Dynamo state: one graph per shape); returns seconds."""
    import torch

    from tuned_kernels.inductor_edge.hooks import forget_compiled_graphs

    m, n, k, dtype = gemm
    forget_compiled_graphs()
    x = torch.randn(m, k, device=device, dtype=getattr(torch, dtype)) * k**-0.5
    w = torch.randn(n, k, device=device, dtype=getattr(torch, dtype))
    t0 = time.perf_counter()
    out = torch.compile(torch.nn.functional.linear, mode="max-autotune", dynamic=False)(x, w)
    torch.testing.assert_close(out, torch.nn.functional.linear(x, w), atol=5e-2, rtol=5e-2)
    return time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> int:
    from tuned_kernels.aot.corpus import parse_shard

    parser = argparse.ArgumentParser(prog="python -m tuned_kernels.aot.inductor_gemms", description=__doc__)
    parser.add_argument("--shapes", choices=("quick", "full"), default="full")
    parser.add_argument(
        "--shard", type=parse_shard, default=(0, 1), help="I/N: every N-th shape from the I-th"
    )
    parser.add_argument("--dtypes", nargs="+", default=["float16", "bfloat16"])
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)
    index, count = args.shard
    todo = gemms(args.shapes, args.dtypes)[index::count]
    for i, gemm in enumerate(todo, 1):
        seconds = run(gemm, args.device)
        print(
            f"[{i}/{len(todo)}] linear M={gemm[0]} N={gemm[1]} K={gemm[2]} {gemm[3]}: {seconds:.1f}s",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
