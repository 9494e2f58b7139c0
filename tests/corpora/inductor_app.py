"""A torch.compile(mode="max-autotune") program whose GEMM Inductor must choose an implementation for:
ATen's mm, or a second implementation the program registers (a slow one, so that the choice is stable).
Checks its output against eager PyTorch."""

import time

import torch
import torch._inductor.config as inductor_config


def slow_mm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    time.sleep(0.02)  # 800 times the mm: the choice holds on a loaded machine
    torch.mm(a, b, out=out)


inductor_config.external_matmul = [slow_mm]


def layer(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


a, b = torch.randn(64, 256), torch.randn(256, 128)
torch.testing.assert_close(torch.compile(layer, mode="max-autotune")(a, b), layer(a, b))
