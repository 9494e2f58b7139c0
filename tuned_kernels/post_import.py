"""Run a function right after a module is first imported (at once if it already is), without importing it.

Used to start serving when the program itself imports Triton's autotuner or Inductor's config, so that a
program that never uses them pays nothing for `TUNED_KERNELS=1`.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any


def when_imported(name: str, then: Callable[[ModuleType], None]) -> None:
    """Calls `then(module)` once `name` is imported: now if it is already, else right after its import."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
        return
    waiting = [f for f in sys.meta_path if isinstance(f, _AfterImport) and f.name == name]
    if waiting:  # one finder per module: a second would never be asked, and stay in sys.meta_path
        waiting[0].callbacks.append(then)
    else:
        sys.meta_path.insert(0, _AfterImport(name, then))


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.callbacks = [then]  # in the order they were asked for

    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return None
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        for then in self.callbacks:
            try:
                then(module)
            except Exception as exc:  # never break the user's program
                print(f"tuned-kernels: not enabled: {type(exc).__name__}: {exc}", file=sys.stderr)
