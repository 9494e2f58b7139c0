"""Whether kernels run through Triton's interpreter (TRITON_INTERPRET: the cpu target). The one place
that asks, and the one place that turns it on."""

from __future__ import annotations

import os

INTERPRET_ENV = "TRITON_INTERPRET"

_turned_on_here = False


def interpreting() -> bool:
    return os.environ.get(INTERPRET_ENV, "0") not in ("", "0")


def interpret_from_now_on() -> None:
    """Kernels defined from now on in this process (and its children) run on the interpreter: Triton
    decides when `@triton.jit` runs, so a kernel defined before this call stays compiled."""
    global _turned_on_here
    os.environ[INTERPRET_ENV] = "1"
    _turned_on_here = True


def defined_before_interpreting(kernel: object) -> bool:
    """Whether `kernel` (an autotuner, heuristics or JIT function) was defined compiled, before this process
    turned the interpreter on for want of a GPU: launching it would end in Triton's "0 active drivers"."""
    if not _turned_on_here:
        return False
    from triton.runtime.interpreter import InterpretedFunction

    layer: object = kernel
    while layer is not None:
        if isinstance(layer, InterpretedFunction):
            return False
        layer = getattr(layer, "fn", None)
    return True


def turned_on_here() -> bool:
    """Whether this process turned the interpreter on itself, for want of a GPU (not the user's setting)."""
    return _turned_on_here
