"""The serving matrix's program (tests/test_serving_matrix.py): an autotuned Triton kernel calling a helper
that reads a global constexpr, and a torch.compile graph, each run and checked; with MATRIX_PARTS naming
`triton`, `graph` (both by default), `helion` (a Helion kernel; on the CPU searched by tests/helion_program.py's
wall-clock search, whose folder MATRIX_HELION_SEARCH names), on MATRIX_DEVICE (default: cpu). Prints one line,
`MATRIX {...}`: a digest of each part's outputs (the same kernels on the same inputs give the same bits),
Inductor's counts of graphs found in its caches and compiled, and what `tuned_kernels.stats()` says where
tuned-kernels serves."""

import hashlib
import json
import os

import torch

PARTS = os.environ.get("MATRIX_PARTS", "triton,graph").split(",")
DEVICE = os.environ.get("MATRIX_DEVICE", "cpu")
report: dict = {"outputs": {}}

if "triton" in PARTS:
    import triton
    import triton.language as tl

    FACTOR: tl.constexpr = tl.constexpr(2.0)

    @triton.jit
    def scaled(x):
        return x * FACTOR

    @triton.autotune(
        configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
        key=["n"],
    )
    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, scaled(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)

    torch.manual_seed(0)  # each part's inputs the same whichever parts run
    digest = hashlib.sha256()
    for n in (100, 1000):
        x = torch.randn(n, device=DEVICE)
        y = torch.empty_like(x)
        scale_kernel[lambda meta, n=n: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
        torch.testing.assert_close(y, x * FACTOR.value)
        digest.update(y.cpu().numpy().tobytes())
    report["outputs"]["triton"] = digest.hexdigest()[:16]

if "graph" in PARTS:
    from torch._dynamo.utils import counters

    torch.manual_seed(0)
    layer = torch.nn.Linear(16, 16, device=DEVICE)

    def forward(inputs: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(layer(inputs)).softmax(-1)

    x = torch.randn(4, 16, device=DEVICE)
    with torch.no_grad():
        out = torch.compile(forward)(x)
        torch.testing.assert_close(out, forward(x))
    report["outputs"]["graph"] = hashlib.sha256(out.cpu().numpy().tobytes()).hexdigest()[:16]
    report["graphs"] = {
        "fxgraph_hits": counters["inductor"]["fxgraph_cache_hit"],
        "fxgraph_misses": counters["inductor"]["fxgraph_cache_miss"],
    }

if "helion" in PARTS:
    import sys

    import helion
    import helion.language as hl

    sys.path.insert(0, os.environ["MATRIX_HELION_SEARCH"])
    import helion_program

    @helion.kernel()
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        for tile in hl.tile(x.size()):
            out[tile] = x[tile] + y[tile]
        return out

    torch.manual_seed(0)
    x, y = torch.randn(64, 32, device=DEVICE), torch.randn(64, 32, device=DEVICE)
    out = add(x, y)
    torch.testing.assert_close(out, x + y)
    report["outputs"]["helion"] = hashlib.sha256(out.cpu().numpy().tobytes()).hexdigest()[:16]
    report["helion_searches"] = list(helion_program.SEARCHES)

try:
    import tuned_kernels

    report["stats"] = tuned_kernels.stats()
except ImportError:
    pass
report["uid"] = os.getuid() if hasattr(os, "getuid") else None  # the account it ran as
print("MATRIX " + json.dumps(report, default=str))
