"""A library's own operator (`torch.library.custom_op`), called from the library's module as models call
theirs: Dynamo, tracing `shifted` into a caller's frame, guards the operator's identity there
(`G['__import_frame_ops'].torch.ops.frame_app.shift`)."""

import torch


@torch.library.custom_op("frame_app::shift", mutates_args=())
def shift(x: torch.Tensor) -> torch.Tensor:
    return x + 1


@shift.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


shift.register_autograd(lambda ctx, grad: grad)


def shifted(x: torch.Tensor) -> torch.Tensor:
    return torch.ops.frame_app.shift(x)
