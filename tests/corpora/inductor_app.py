"""A torch.compile(mode="max-autotune") program whose GEMM Inductor must choose an implementation for:
ATen's mm, or a second implementation the program registers (a slow one, so that the choice is stable).
Checks its output against eager PyTorch, and prints how often the slow one ran (each run a benchmark: Inductor
benchmarks it in this process, autotune_in_subproc being off on the CPU)."""

import time

import torch
import torch._inductor.config as inductor_config

SLOW_MM_CALLS = [0]  # each a benchmark of it: the compiled graph calls ATen's mm, which wins


def slow_mm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    SLOW_MM_CALLS[0] += 1
    time.sleep(0.02)  # 800 times the mm: the choice holds on a loaded machine
    torch.mm(a, b, out=out)


inductor_config.external_matmul = [slow_mm]


def layer(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


a, b = torch.randn(64, 256), torch.randn(256, 128)
torch.testing.assert_close(torch.compile(layer, mode="max-autotune")(a, b), layer(a, b))
print(f"SLOW_MM_CALLS {SLOW_MM_CALLS[0]}")
