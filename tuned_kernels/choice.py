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
import time
from collections.abc import Callable
from typing import Any

from tuned_kernels import model, resolving
from tuned_kernels.decision import Measured, candidates, launched
from tuned_kernels.triton_edge.benchmarker import quick_benchmarker
from tuned_kernels.triton_edge.keys import config_from_triton, kernel_identity, tuning_key

IMPL = "IMPL"
MAX_FAST_KEYS = 4096


class ImplementationChoice:
    """A `triton_edge.keys.Tunable`, as an `@triton.autotune` kernel is. `signature` names the op's arguments
    (its source is the choice's identity); `key` the arguments whose values select; `impls` the
    implementations by name, the default first."""

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
        # the hot path: the implementation by a tuple made in ~1 us (key values by position, dtypes as objects)
        self._key_positions = tuple(self.arg_names.index(k) for k in key if k in self.arg_names)
        self._chosen: dict[tuple[Any, ...], Callable[..., Any]] = {}

    def prune_configs(self, kwargs: dict[str, Any]) -> list[Any]:
        return list(self.configs)

    def __call__(self, *args: Any) -> Any:
        return self.run(*args)  # through `run`, which the tuner replaces on the instance to probe launches

    def run(self, *args: Any, **kwargs: Any) -> Any:
        impl = self.known(*args)
        if impl is None:
            if len(self._chosen) >= MAX_FAST_KEYS:  # keyed on objects (tensors?): bounded, not a leak
                self._chosen.clear()
            impl = self._chosen[self._fast_key(args)] = self.impls[self._name_for(args)]
        return impl(*args, **kwargs)

    def known(self, *args: Any) -> Callable[..., Any] | None:
        """The implementation already decided for these arguments' key (None: not yet). Only the key's
        values and the arguments' dtypes are read, so a caller may ask before making an output tensor,
        passing a stand-in of the output's dtype."""
        if len(self.configs) == 1:  # forced (by the tuner) or a single implementation
            return self.impls[self.configs[0].kwargs[IMPL]]
        return self._chosen.get(self._fast_key(args))

    def _fast_key(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return (*(args[i] for i in self._key_positions), *(getattr(a, "dtype", None) for a in args))

    def _name_for(self, args: tuple[Any, ...]) -> str:
        """The implementation for these arguments' tuning key (formed as Triton forms it), decided once."""
        key = tuning_key(self, dict(zip(self.arg_names, args, strict=False)))
        name = self.cache.get(key)
        if name is None:
            name = self.cache[key] = self._decide(key, args)
        return name

    def _decide(self, key: model.TuningKey, args: tuple[Any, ...]) -> str:
        """The installed resolver's answer for this key (with none installed, the default): a stored
        implementation, or each implementation timed once and the winner recorded."""
        resolver = resolving.current()
        if resolver is None:
            return next(iter(self.impls))
        identity = kernel_identity(self)
        by_config = {config_from_triton(c): name for c, name in zip(self.configs, self.impls, strict=True)}
        decision = resolver.decide(identity, key, by_config.__contains__)
        if decision.served:
            return by_config[decision.configs[0]]
        tried = candidates(list(by_config), decision)
        bench = quick_benchmarker()
        started = time.perf_counter()
        timings = {c: bench(_bound(self.impls[by_config[c]], args)) for c in tried} if len(tried) > 1 else {}
        measured = Measured(identity, key, decision, timings, time.perf_counter() - started)
        return by_config[launched(tried, measured, resolver.record(measured))]


def _bound(impl: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[], Any]:
    return lambda: impl(*args)
