"""Inductor starts its compile-worker pool (a process of its own, which imports torch) as each graph's
compile begins, before it looks its caches up (`AsyncCompile.wakeup` for a GPU's inputs, `maybe_warm_pool`
in the named backend), and again as a cached graph's kernels load (`use_process_pool` creates it): time of
a served first call, where every graph is found and no worker is ever used. While a bundle's compiled
graphs are served the pool is held back: its start and use wait until Inductor compiles a graph after all,
and the kernels of a graph found load in this process, as they do while a started pool is not yet ready."""

from __future__ import annotations

import sys
import threading
from types import ModuleType
from typing import Any

from tuned_kernels.inductor_edge.shapes import INDUCTOR_COMPILE_POOL
from tuned_kernels.internals import holds

MODULE = "torch._inductor.async_compile"
_lock = threading.Lock()  # graphs may compile on several threads at once
_wanted = [False]  # held from Inductor's import of its compile module on, until released
_held: dict[str, Any] = {}  # each held attribute's own value (a classmethod as the class holds it)
_asked: set[str] = set()  # the starts Inductor asked for while held


def hold() -> None:
    """From Inductor's import of its compile module on, its compile workers wait for `release`."""
    from tuned_kernels.post_import import when_imported

    _wanted[0] = True
    when_imported(MODULE, _hold)


def _hold(module: ModuleType) -> None:
    pool: Any = getattr(module, "AsyncCompile", None)
    with _lock:
        if not _wanted[0] or _held or not callable(getattr(module, "maybe_warm_pool", None)):
            return
        if not holds(INDUCTOR_COMPILE_POOL, pool) or not {"wakeup", "use_process_pool"} <= vars(pool).keys():
            return
        _held["maybe_warm_pool"] = module.maybe_warm_pool
        _held["wakeup"] = vars(pool)["wakeup"]
        _held["use_process_pool"] = vars(pool)["use_process_pool"]
        module.maybe_warm_pool = _warm_asked  # type: ignore[attr-defined]
        pool.wakeup = classmethod(_wakeup_asked)
        pool.use_process_pool = classmethod(_not_ready)


def _warm_asked() -> None:
    """Inductor's backend asked to start the pool: kept for `release`."""
    _asked.add("maybe_warm_pool")


def _wakeup_asked(cls: Any) -> None:
    """A compile's entry asked to start the pool: kept for `release`."""
    _asked.add("wakeup")


def _not_ready(cls: Any) -> bool:
    """The pool is not ready: Inductor does the work in this process, as before a started pool is ready."""
    return False


def release(start: bool = True) -> None:
    """Inductor's own pool start and use back in place, and (`start`) the pool started now if Inductor asked
    for it while held."""
    with _lock:
        _wanted[0] = False
        module = sys.modules.get(MODULE)
        if not _held or module is None:
            return
        module.maybe_warm_pool = _held.pop("maybe_warm_pool")  # type: ignore[attr-defined]
        for name in ("wakeup", "use_process_pool"):
            setattr(module.AsyncCompile, name, _held.pop(name))
        asked = set(_asked) if start else set()
        _asked.clear()
    if "maybe_warm_pool" in asked:
        module.maybe_warm_pool()
    if "wakeup" in asked:
        module.AsyncCompile.wakeup()
