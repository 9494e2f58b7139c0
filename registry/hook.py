"""Makes every `@triton.autotune` kernel consult the registry first.

Triton's `Autotuner.run` calls `prune_configs` only on a key it has not cached, and when pruning leaves a
single config it uses it without benchmarking (Triton 3.6 to 3.9). Replacing `prune_configs` therefore
costs nothing on the hot path: a hit returns the stored config, which Triton then caches itself; a miss
benchmarks the configs here (through the kernel's own `do_bench`), remembers the winner in the overlay, and
returns it. Kernels defined before or after `enable()` are covered: the method is patched on the class.

A stored config is input from outside the program: it is served only if it is one of the kernel's own
configs (after its `prune_configs_by`), and a launch that raises with a served config is retried once
with the key tuned as Triton would, never trying that config again. Configs a bundle recorded as rejected
(wrong numbers, failed compiles) are never tried on a miss.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import time
from collections.abc import Iterable, Iterator
from typing import Any

from tuned_kernels.registry.runtime import CAPTURE_ENV, REGISTRY, Decision, warn

from tuned_kernels import model
from tuned_kernels.errors import one_line
from tuned_kernels.triton_edge import cache_manager
from tuned_kernels.triton_edge.compile import artifact_of, warmup
from tuned_kernels.triton_edge.keys import config_from_triton, kernel_identity, kernel_space, tuning_key

_state: dict[str, Any] = {"enabled": False, "original": None}


def _autotuner_class() -> Any:
    from triton.runtime.autotuner import Autotuner

    return Autotuner


def enable() -> None:
    """From now on, every autotuned kernel in the process consults the bundles first."""
    cls = _autotuner_class()
    if _state["original"] is None:
        _state["original"] = cls.prune_configs
        _state["bench"] = cls._bench
        _state["run"] = cls.run
        cls.prune_configs = _prune_configs
        cls._bench = _bench
        cls.run = _run
    if len(cache_manager.STORE):
        cache_manager.install()
    _state["enabled"] = True


def disable() -> None:
    cls = _autotuner_class()
    if _state["original"] is not None:
        cls.prune_configs = _state["original"]
        cls._bench = _state["bench"]
        cls.run = _state["run"]
        _state["original"] = None
    cache_manager.uninstall()
    _state["enabled"] = False


def is_enabled() -> bool:
    return bool(_state["enabled"])


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    was = is_enabled()
    disable()
    try:
        yield
    finally:
        if was:
            enable()


@contextlib.contextmanager
def serving(entries: Iterable[model.Entry]) -> Iterator[None]:
    """Within this block the registry is enabled and also answers from `entries` (the tuner uses it
    while measuring implementation choices whose implementations are kernels it tuned)."""
    REGISTRY.load()
    REGISTRY.add_local(tuple(entries))
    was = is_enabled()
    enable()
    try:
        yield
    finally:
        if not was:
            disable()


def _prune_configs(self: Any, kwargs: dict[str, Any]) -> list[Any]:
    original = _state["original"] or _autotuner_class().prune_configs
    try:
        identity = kernel_identity(self)
        key = tuning_key(self, {**self.nargs, **kwargs})
        own = {config_from_triton(c): c for c in kernel_space(self, kwargs)}
        decision = REGISTRY.decide(identity, key, own.__contains__)
    except Exception as exc:  # the registry must never break a launch: tuned here, as Triton would
        warn(f"registry look-up failed, tuning normally: {one_line(f'{type(exc).__name__}: {exc}')}")
        space = list(original(self, kwargs))
        if len(space) == 1:
            return space
        winner, _ = _benchmark(self, space, kwargs)
        self._tuned_kernels_chosen = winner
        return [winner]
    if decision.kind in ("hit", "nearest"):
        chosen = own[decision.configs[0]]  # the kernel's own triton.Config, with its pre_hook
        REGISTRY.count(decision, identity, 0, key)
        self._tuned_kernels_chosen = chosen  # Triton 3.6 benchmarks even a single config: see _bench
        self._tuned_kernels_served = ((identity.name, identity.source_hash, key), decision)
        return [chosen]
    space = list(original(self, kwargs))
    pruned = [c for c in space if config_from_triton(c) not in decision.excluded] or space
    if decision.kind == "seed":
        pruned = _seeded_space(self, decision, pruned)
    if len(pruned) == 1:
        REGISTRY.count(decision, identity, 0, key)
        return pruned
    winner, timings = _benchmark(self, pruned, kwargs)
    REGISTRY.count(decision, identity, len(timings), key)
    self._tuned_kernels_chosen = winner  # measured already: Triton 3.6 would time it once more
    REGISTRY.remember(*_online_entry(self, identity, key, decision, winner, timings, kwargs))
    return [winner]


def _online_entry(
    autotuner: Any,
    identity: model.KernelIdentity,
    key: model.TuningKey,
    decision: Decision,
    winner: Any,
    timings: dict[Any, list[float]],
    kwargs: dict[str, Any],
) -> tuple[model.Entry, dict[str, bytes]]:
    """What a miss found, to remember: the winner, the next best few, and (capturing) its compiled kernel."""
    ranked = sorted(
        ((t[0], repr(c), c) for c, t in timings.items() if t[0] != float("inf")), key=lambda r: r[:2]
    )
    best = config_from_triton(winner)
    artifacts, blobs = _captured_artifact(autotuner, {**autotuner.nargs, **kwargs}, best)
    entry = model.Entry(
        kernel=identity,
        key=key,
        best=best,
        timings=tuple(model.Timing(config_from_triton(c), float(t)) for t, _, c in ranked[:5]),
        found_by=model.FoundBy.SEEDED if decision.kind == "seed" else model.FoundBy.ONLINE,
        configs_benchmarked=len(timings),
        artifacts=artifacts,
    )
    return entry, blobs


def _run(self: Any, *args: Any, **kwargs: Any) -> Any:
    """Triton's `Autotuner.run`; when the launch raises with a config served in this very call, the key is
    tuned once as Triton would (without that config) and the launch retried."""
    self.__dict__.pop("_tuned_kernels_served", None)
    try:
        return _state["run"](self, *args, **kwargs)
    except Exception as exc:
        served = self.__dict__.pop("_tuned_kernels_served", None)
        if served is None:
            raise
        slot, decision = served
        self.cache.pop(slot[2], None)
        REGISTRY.refuse(slot, decision.configs[0])
        warn(
            f"{decision.source}: config {one_line(decision.configs[0].describe(), 80)} failed to launch "
            f"{slot[0]} ({one_line(f'{type(exc).__name__}: {exc}', 120)}); tuning instead"
        )
        return _state["run"](self, *args, **kwargs)


def _captured_artifact(
    autotuner: Any, named_args: dict[str, Any], best: model.Config
) -> tuple[tuple[model.Artifact, ...], dict[str, bytes]]:
    """When capturing on a GPU, the winner's compiled kernel (compiled while benchmarking) goes along."""
    if not os.environ.get(CAPTURE_ENV) or _interpreting():
        return (), {}
    try:
        artifact, blobs = artifact_of(warmup(autotuner, named_args, best), best)
    except Exception as exc:
        warn(f"could not keep the compiled kernel of {best.describe()}: {type(exc).__name__}: {exc}")
        return (), {}
    return (artifact,), blobs


def _bench(self: Any, *args: Any, config: Any, **kwargs: Any) -> list[float]:
    """Triton 3.6's `Autotuner.run` times the pruned configs even when only one is left; the config the
    registry chose is not timed (Triton keeps it as the winner), every other call is Triton's own."""
    if self.__dict__.pop("_tuned_kernels_chosen", None) is config:
        return [0.0, 0.0, 0.0]
    result: list[float] = _state["bench"](self, *args, config=config, **kwargs)
    return result


def _seeded_space(autotuner: Any, decision: Decision, pruned: list[Any]) -> list[Any]:
    """A stale bundle's configs and their neighbours: a fast re-tune after a compiler bump."""
    from tuned_kernels.search import neighbours

    space = {config_from_triton(c): c for c in pruned}
    keep = {s for s in decision.configs if s in space}
    for seed in list(keep):
        keep.update(neighbours(seed, list(space)))
    return [space[c] for c in space if c in keep] or pruned


def _benchmark(
    autotuner: Any, configs: list[Any], kwargs: dict[str, Any]
) -> tuple[Any, dict[Any, list[float]]]:
    """Benchmarks as `Autotuner.run` would, with a wall-clock benchmarker under Triton's interpreter."""
    args = list(autotuner.nargs.values())
    if _interpreting() and autotuner._do_bench is None:
        autotuner.__dict__["do_bench"] = _wall_clock_do_bench
    start = time.time()
    timings = {config: autotuner._bench(*args, config=config, **kwargs) for config in configs}
    autotuner.bench_time = time.time() - start
    winner = builtins.min(timings, key=lambda c: timings[c])
    autotuner.pre_hook({**autotuner.nargs, **kwargs, **winner.all_kwargs()}, reset_only=True)
    autotuner.configs_timings = timings
    return winner, timings


def _wall_clock_do_bench(kernel_call: Any, quantiles: Any = None, **_: Any) -> list[float]:
    from tuned_kernels.triton_edge.benchmarker import WallClockBenchmarker

    ms = WallClockBenchmarker(min_reps=2, min_seconds=0.0)(kernel_call)
    return [ms, ms, ms]


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
