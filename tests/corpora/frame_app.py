"""A torch.compile program for the CPU whose forward is one whole graph and reads globals Dynamo guards by
identity: an activation chosen by `FRAME_APP_ACT` (`relu`, the default, or `tanh`), a helper function
behind a decorator (a closure over it and an enum member) and a library's operator (frame_ops.py, beside it);
the block alone and two of them in an `nn.Sequential`, on a batch of 4 rows or, given `FRAME_APP_BATCH`,
of that many, the batch dimension marked dynamic. With `FRAME_APP_GUARDS_UNLOADABLE`, this torch fails to
read saved guards back as torch 2.11 fails on some (a function's defaults guarded: "DefaultsSource.__init__()
takes from 3 to 4 positional arguments but 6 were given").
Checks its output against eager PyTorch, also once `ACT` is rebound to another function, and prints how
many frames Dynamo traced before that and Inductor's graph look-ups: `FRAMES {...}`."""

import enum
import json
import os
from collections.abc import Callable

import frame_ops
import torch
from torch._dynamo.utils import counters

ACT = getattr(torch, os.environ.get("FRAME_APP_ACT", "relu"))


class Times(enum.Enum):
    TWO = 2


def scaled(
    by: Times,
) -> Callable[[Callable[[torch.Tensor], torch.Tensor]], Callable[[torch.Tensor], torch.Tensor]]:
    """A decorator: Dynamo guards its wrapper by identity, a closure over the function it wraps and `by`."""

    def wrap(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
        def wrapped(y: torch.Tensor) -> torch.Tensor:
            return fn(y) * by.value

        return wrapped

    return wrap


@scaled(Times.TWO)
def doubled(y: torch.Tensor) -> torch.Tensor:
    return y


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return frame_ops.shifted(doubled(ACT(self.linear(x))))


if os.environ.get("FRAME_APP_GUARDS_UNLOADABLE"):
    import torch._dynamo.package

    def unloadable(*args: object, **kwargs: object) -> None:
        raise TypeError("DefaultsSource.__init__() takes from 3 to 4 positional arguments but 6 were given")

    torch._dynamo.package.load_guards_state = unloadable

torch.manual_seed(0)
block = Block()
x = torch.randn(int(os.environ.get("FRAME_APP_BATCH", "4")), 16)
if "FRAME_APP_BATCH" in os.environ:
    torch._dynamo.mark_dynamic(x, 0)
compiled = torch.compile(block)
torch.testing.assert_close(compiled(x), block(x))
torch.testing.assert_close(compiled(x + 1), block(x + 1))  # called again: Dynamo's cache answers
stack = torch.nn.Sequential(Block(), Block())  # traced through a closure holding the module (wrap_inline)
torch.testing.assert_close(torch.compile(stack)(x), stack(x))
frames = {
    "traced": counters["frames"]["total"],
    "fxgraph_hits": counters["inductor"]["fxgraph_cache_hit"],
    "fxgraph_misses": counters["inductor"]["fxgraph_cache_miss"],
}
ACT = torch.sigmoid  # rebound: the compiled forward must not run the function it was compiled with
torch.testing.assert_close(compiled(x), block(x))
print("FRAMES " + json.dumps(frames))
