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
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from tuned_kernels import model
from tuned_kernels.errors import one_line
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
        from tuned_kernels.registry.hook import is_enabled
        from tuned_kernels.registry.runtime import REGISTRY, warn

        default = next(iter(self.impls))
        if not is_enabled():
            return default
        identity = kernel_identity(self)
        try:
            own = {config_from_triton(c) for c in self.configs}
            decision = REGISTRY.decide(identity, key, own.__contains__)
        except Exception as exc:  # the registry must never break the op: its default implementation runs
            warn(f"registry look-up failed, using {default}: {one_line(f'{type(exc).__name__}: {exc}')}")
            return default
        if decision.kind in ("hit", "nearest"):
            REGISTRY.count(decision, identity, 0, key)
            return str(dict(decision.configs[0].kwargs)[IMPL])
        times = {name: _time(_bound(impl, args)) for name, impl in self.impls.items()}
        winner = min(times, key=lambda n: times[n])
        REGISTRY.count(decision, identity, len(times), key)
        configs = {name: config_from_triton(c) for name, c in zip(self.impls, self.configs, strict=True)}
        REGISTRY.remember(
            model.Entry(
                kernel=identity,
                key=key,
                best=configs[winner],
                timings=tuple(
                    model.Timing(configs[n], t) for n, t in sorted(times.items(), key=lambda x: x[1])
                ),
                found_by=model.FoundBy.ONLINE,
                configs_benchmarked=len(times),
            )
        )
        return winner


def _bound(impl: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[], Any]:
    return lambda: impl(*args)


def _time(fn: Callable[[], Any]) -> float:
    """Milliseconds per call: Triton's benchmarker on a GPU, wall clock under the interpreter."""
    if os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=5, rep=20, return_mode="median"))
    fn()
    samples = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)
