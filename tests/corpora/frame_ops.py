"""A library as models call theirs, from its own module: its entry checks what it was given (`type(x)`),
calls the library's own operator (`torch.library.custom_op`) and hands its result back through its output
class, registered with torch's pytree. Dynamo, tracing `shifted` into a caller's frame, guards the
operator's identity there (`G['__import_frame_ops'].torch.ops.frame_app.shift`), the class `type(x)` gave
through a global it installs for torch (`G['_…_c0'].Tensor`) and pytree's registry through an import of
torch (`__import__('torch').utils._pytree.SUPPORTED_NODES`)."""

import dataclasses

import torch
from torch.utils import _pytree as pytree


@torch.library.custom_op("frame_app::shift", mutates_args=())
def shift(x: torch.Tensor) -> torch.Tensor:
    return x + 1


@shift.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


shift.register_autograd(lambda ctx, grad: grad)


@dataclasses.dataclass
class Shifted:
    value: torch.Tensor


pytree.register_dataclass(Shifted)


def shifted(x: torch.Tensor) -> torch.Tensor:
    if type(x) is not torch.Tensor:
        raise TypeError(f"shifted takes a tensor, not {type(x).__name__}")
    (value,), _ = pytree.tree_flatten(Shifted(torch.ops.frame_app.shift(x)))
    return value
