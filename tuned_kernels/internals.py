"""The shape of a library's internals a patch was written for (a class and its methods), checked before
the patch: a library laid out otherwise is said once, in one line naming what is missing and what that
costs, and the patch steps aside (the library does that work as it would without us). The shapes are
named in the edges that patch them: `triton_edge/shapes.py`, `inductor_edge/shapes.py`."""

from __future__ import annotations

import contextlib
import importlib
import inspect
from dataclasses import dataclass
from typing import Any

from tuned_kernels.errors import warn


@dataclass(frozen=True)
class Shape:
    module: str
    owner: str  # a class of `module` (or a submodule, its methods the module's functions)
    methods: tuple[str, ...]  # each a callable of `owner`
    without: str  # what happens where the shape does not hold
    calls: tuple[str, str] | None = None  # (a method, a name it must call by name): how it reaches a patch


_said: set[str] = set()


def holds(shape: Shape, owner: Any = None) -> bool:
    """Whether `shape` holds for `owner` (default: the class it names, imported), said once where not."""
    try:
        owner = _imported(shape) if owner is None else owner
    except (ImportError, AttributeError):
        return _not(shape, f"{shape.module}.{shape.owner}")
    for method in shape.methods:
        if not callable(getattr(owner, method, None)):
            return _not(shape, f"{shape.owner}.{method}")
    if shape.calls is not None:
        caller, callee = shape.calls
        original = inspect.unwrap(getattr(owner, caller))  # where a patch of ours wraps it: the original
        code = getattr(original, "__code__", None)
        if code is None or callee not in code.co_names:
            return _not(shape, f"{shape.owner}.{caller} calling {callee}")
    return True


def _imported(shape: Shape) -> Any:
    """The owner `shape` names: a class of its module, or a submodule not imported yet."""
    module = importlib.import_module(shape.module)
    try:
        return getattr(module, shape.owner)
    except AttributeError:
        return importlib.import_module(f"{shape.module}.{shape.owner}")


def _not(shape: Shape, missing: str) -> bool:
    library = shape.module.split(".")[0]
    try:
        version = str(importlib.import_module(library).__version__)
    except (ImportError, AttributeError):
        version = ""
    said = f"this {library} {version} has no {missing}: {shape.without}"
    if said not in _said:
        _said.add(said)
        with contextlib.suppress(Warning):  # a warning made an error (-W error): the patch still steps aside
            warn(said)
    return False
