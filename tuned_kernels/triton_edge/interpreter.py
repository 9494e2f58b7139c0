"""Whether kernels run through Triton's interpreter (TRITON_INTERPRET: the cpu target). The one place
that asks, and the one place that turns it on."""

from __future__ import annotations

import os
from typing import Any

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


def interpret_instead(kernel: object) -> bool:
    """Makes `kernel` (an autotuner or heuristics over a JIT function), defined compiled before this process
    turned the interpreter on, run on the interpreter from now on, as if it had been defined after: its JIT
    function, and the JIT functions it calls by a global name (in their modules), are replaced by the
    interpreted functions `triton.jit` makes under TRITON_INTERPRET=1. False where no such layer is found
    (the kernel then cannot run here)."""
    from triton.runtime.jit import JITFunction

    layer: object = kernel
    while layer is not None:
        inner = getattr(layer, "fn", None)
        if isinstance(inner, JITFunction):
            layer.fn = _interpreted(inner, {})  # type: ignore[attr-defined]
            return True
        layer = inner
    return False


def _interpreted(jit: Any, done: dict[int, Any]) -> Any:
    """The interpreted function of `jit`, its callees (JIT functions its code names as globals) made
    interpreted in their module's globals first; `done` holds those made so far (by id)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    if id(jit) in done:
        return done[id(jit)]
    names = ("version", "do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline")
    made = InterpretedFunction(jit.fn, **{n: getattr(jit, n) for n in names if hasattr(jit, n)})
    done[id(jit)] = made
    scope = jit.fn.__globals__
    for name in jit.fn.__code__.co_names:
        if isinstance(scope.get(name), JITFunction):
            scope[name] = _interpreted(scope[name], done)
    return made
