"""Kernel selection: choosing among implementations of one op per key (XLA's idea), tuned and shipped
exactly like an autotuned kernel's config.

An `ImplementationChoice` looks to the tuner, the bundles and the registry like an `@triton.autotune`
kernel whose configs are `{"IMPL": name}`: `tune` measures each implementation per key and records the
winner, bundles carry it, and the op dispatches to the recorded winner. With tuned-kernels enabled, a key
no bundle holds is decided by timing each implementation once and remembered in the overlay; with it
disabled, the first implementation is used (no timing at run time unless asked for).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from tuned_kernels import model, resolving
from tuned_kernels.triton_edge.benchmarker import quick_benchmarker
from tuned_kernels.triton_edge.keys import config_from_triton, kernel_identity, tuning_key

IMPL = "IMPL"


class ImplementationChoice:
    """`signature` names the op's arguments (its source is the choice's identity); `key` the arguments
    whose values select; `impls` the implementations by name, the default first."""

    def __init__(
        self, signature: Callable[..., Any], impls: dict[str, Callable[..., Any]], key: list[str]
    ) -> None:
        import triton

        self.fn = signature
        self.impls = impls
        self.arg_names = list(inspect.signature(signature).parameters)
        self.keys = key
        self.configs = [triton.Config({IMPL: name}) for name in impls]
        self.cache: dict[model.TuningKey, str] = {}
        self.nargs: dict[str, Any] | None = None

    def prune_configs(self, kwargs: dict[str, Any]) -> list[Any]:
        return list(self.configs)

    def __call__(self, *args: Any) -> Any:
        return self.run(*args)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        if len(self.configs) == 1:  # forced (by the tuner) or a single implementation
            return self.impls[self.configs[0].kwargs[IMPL]](*args, **kwargs)
        named = dict(zip(self.arg_names, args, strict=False))
        key = tuning_key(self, named)
        name = self.cache.get(key)
        if name is None:
            name = self.cache[key] = self._decide(key, args)
        return self.impls[name](*args, **kwargs)

    def _decide(self, key: model.TuningKey, args: tuple[Any, ...]) -> str:
        """The installed resolver's answer for this key (with none installed, the default)."""
        default = next(iter(self.impls))
        resolver = resolving.current()
        if resolver is None:
            return default
        own = {config_from_triton(c): name for c, name in zip(self.configs, self.impls, strict=True)}
        bench = quick_benchmarker()

        def measure(names: Sequence[str]) -> dict[str, float]:
            return {name: bench(_bound(self.impls[name], args)) for name in names}

        return resolver.resolve(kernel_identity(self), key, own, measure).chosen


def _bound(impl: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[], Any]:
    return lambda: impl(*args)
