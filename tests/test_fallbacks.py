"""Each plainer way tuned-kernels takes instead of the one it meant is counted, so stats() and the verbose
summary can name it (the overlay and the hooks' fall-backs: tests/test_hostile.py)."""

from __future__ import annotations

from typing import Any

import torch

from tuned_kernels import fallbacks
from tuned_kernels.triton_edge import direct_launch, tma


def _more(kind: str, action: Any) -> tuple[Any, int]:
    before = fallbacks.counts().get(kind, 0)
    result = action()
    return result, fallbacks.counts().get(kind, 0) - before


def test_a_direct_launch_that_cannot_be_set_up_goes_through_triton_and_is_counted() -> None:
    class JITFunction:  # what Triton's objects look like to the direct launch, but for best_config
        pre_run_hooks = ()
        arg_names = ("x_ptr", "n")

    class Autotuner:
        fn = JITFunction()

        @property
        def best_config(self) -> Any:
            raise AttributeError("laid out otherwise")

    how, counted = _more(
        "direct_launch", lambda: direct_launch._direct_for(Autotuner(), object(), (1,), (), {})
    )
    assert how is direct_launch._THROUGH_TRITON and counted == 1


def test_the_copy_engine_is_not_used_where_the_gpu_driver_cannot_be_asked_and_that_is_counted() -> None:
    """A shape-only (meta) launch on a machine with no GPU driver: the plain kernels, counted."""
    used, counted = _more("copy_engine", lambda: tma.copy_engine(torch.empty(8, device="meta")))
    assert used is False and counted == 1
