"""Run at interpreter start by tuned_kernels.pth when TUNED_KERNELS=1 (or a capture is running).

Costs nothing for programs that never use Triton: `enable()` runs when `triton.runtime.autotuner` is
first imported, through a one-shot import hook.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any

WATCHED = "triton.runtime.autotuner"


class _EnableAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != WATCHED:
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
        try:
            import tuned_kernels

            tuned_kernels.enable()
        except Exception as exc:  # never break the user's program
            print(f"tuned-kernels: not enabled: {type(exc).__name__}: {exc}", file=sys.stderr)


def install() -> None:
    if WATCHED in sys.modules:
        import tuned_kernels

        tuned_kernels.enable()
    else:
        sys.meta_path.insert(0, _EnableAfterImport())


install()
