"""Installing tuned-kernels as Helion's autotune cache, once `helion.autotuner` is imported (importing
nothing of Helion before the program does).

Helion picks a kernel's cache by name from `helion.autotuner.cache_classes` (`autotune_cache=` or
HELION_AUTOTUNE_CACHE; `LocalAutotuneCache` by default). `TunedKernelsCache` is registered under its own
name and answers for the default name too, Helion's local cache behind it, so nothing Helion kept is lost.
A kernel whose program chose another cache (strict, remote, AOT or its own) keeps it: tuned-kernels steps
aside for it, and says so in `stats()` and the verbose summary.
"""

from __future__ import annotations

from typing import Any

from tuned_kernels import resolving

DEFAULT = "LocalAutotuneCache"

_saved: list[dict[str, Any]] = []  # Helion's own `cache_classes`, while ours stands in for it
_watching = [False]


def install_when_imported() -> None:
    if not _watching[0]:
        _watching[0] = True
        from tuned_kernels.post_import import when_imported

        when_imported("helion.autotuner", install)


def install(autotuner: Any) -> None:
    """Stands in for `autotuner.cache_classes` (`helion.autotuner`, given: while it is being imported,
    `helion` has no attribute `autotuner` yet)."""
    from tuned_kernels.helion_edge.shapes import HELION_CACHE
    from tuned_kernels.internals import holds

    if _saved or not holds(HELION_CACHE):
        return
    from tuned_kernels.helion_edge.cache import NAME, TunedKernelsCache

    own = getattr(autotuner, "cache_classes", None)
    if not isinstance(own, dict):
        from tuned_kernels.errors import warn

        warn(f"this helion has no cache_classes dict in helion.autotuner: {HELION_CACHE.without}")
        return
    _saved.append(own)
    autotuner.cache_classes = _CacheClasses({**own, DEFAULT: TunedKernelsCache, NAME: TunedKernelsCache})


def uninstall() -> None:
    import sys

    _watching[0] = False
    autotuner: Any = sys.modules.get("helion.autotuner")
    if autotuner is not None and _saved:
        autotuner.cache_classes = _saved[0]
    _saved.clear()


class _CacheClasses(dict[str, Any]):
    """Helion's name -> cache class map, where a class other than ours (one Helion has, or one the program
    registered) comes back as itself telling the installed resolver that a kernel chose it."""

    def __init__(self, classes: dict[str, Any]) -> None:
        super().__init__(classes)
        self._noting: dict[str, type] = {}

    def get(self, name: str, default: Any = None) -> Any:  # what Helion calls
        from tuned_kernels.helion_edge.cache import TunedKernelsCache

        cls = super().get(name, default)
        if not isinstance(cls, type) or issubclass(cls, TunedKernelsCache):
            return cls
        if name not in self._noting or self._noting[name].__bases__ != (cls,):
            self._noting[name] = _stepping_aside(name, cls)
        return self._noting[name]


def _stepping_aside(name: str, cls: type) -> type:
    """`cls` as it is, telling the installed resolver that a kernel chose it."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        cls.__init__(self, *args, **kwargs)  # type: ignore[misc]
        resolver = resolving.current()
        if resolver is not None:
            from tuned_kernels.helion_edge.keys import identity_of

            try:
                resolver.step_aside(identity_of(self.kernel.kernel).name, f"the program chose {name}")
            except Exception as exc:  # never in the way of the program's own cache
                resolver.warn(f"could not note Helion's {name}: {type(exc).__name__}: {exc}")

    return type(cls.__name__, (cls,), {"__init__": __init__, "__module__": cls.__module__})
