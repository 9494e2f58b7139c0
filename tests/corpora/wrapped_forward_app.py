"""A torch.compile program for the CPU whose module's `forward` sits behind a `functools.wraps` decorator
(as Hugging Face transformers' do) whose wrapper reads an attribute of the function it wraps: the compiled
frame is the wrapper's, its cell holds a function its module names otherwise, and Dynamo guards the
attribute's value. `WRAPPED_APP_SCALE` sets that attribute (2). Checks the output against eager PyTorch and
prints Dynamo's frames traced: `FRAMES {...}`."""

import functools
import json
import os
from collections.abc import Callable

import torch
from torch._dynamo.utils import counters


def scaled_by_attribute(func: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    @functools.wraps(func)
    def wrapper(self: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        return func(self, x) * func.scale  # type: ignore[attr-defined]

    return wrapper


class Layer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    @scaled_by_attribute
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


Layer.forward.__wrapped__.scale = float(os.environ.get("WRAPPED_APP_SCALE", "2"))  # type: ignore[attr-defined]
torch.manual_seed(0)
layer = Layer()
x = torch.randn(4, 8)
torch.testing.assert_close(torch.compile(layer)(x), layer(x))
print("FRAMES " + json.dumps({"traced": counters["frames"]["total"]}))
