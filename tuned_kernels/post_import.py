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
    """Calls `then(module)` once `name` is imported: now if it is already (even while its own import is still
    running it: `being_imported`), else right after its import."""
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
        _run(self.callbacks, module)


def _run(callbacks: list[Callable[[ModuleType], None]], module: ModuleType) -> None:
    for then in callbacks:
        try:
            then(module)
        except Exception as exc:  # never break the user's program
            print(f"tuned-kernels: not enabled: {type(exc).__name__}: {exc}", file=sys.stderr)


def when_import_done(name: str, then: Callable[[ModuleType], None]) -> None:
    """As `when_imported`, but a module still being imported (asked for from inside its own import: a
    module it imports is being imported) is handed over only once it has run to its end, at the next
    module imported after that."""
    module = sys.modules.get(name)
    if module is not None and being_imported(module):
        sys.meta_path.insert(0, _UntilDone(module, then))
    else:
        when_imported(name, then)


def being_imported(module: ModuleType) -> bool:
    """Whether `module`'s own import is still running (importlib's private mark: a module being imported is
    in `sys.modules` before its code has run; read only here)."""
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


class _UntilDone(importlib.abc.MetaPathFinder):
    """Waits for a module still being imported to run to its end: asks after each module imported meanwhile
    (each imported by its own loader, which it keeps)."""

    def __init__(self, module: ModuleType, then: Callable[[ModuleType], None]) -> None:
        self.module = module
        self.then = then

    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _ThenAsk(spec.loader, self)
        return spec

    def ask(self) -> None:
        if self in sys.meta_path and not being_imported(self.module):
            sys.meta_path.remove(self)
            _run([self.then], self.module)


class _ThenAsk(importlib.abc.Loader):
    def __init__(self, loader: Any, waiting: _UntilDone) -> None:
        self.loader = loader
        self.waiting = waiting

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self.loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self.loader  # the module keeps its own loader (its source, its resources)
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        try:
            self.loader.exec_module(module)
        finally:
            self.waiting.ask()
