"""The hook in Triton's `Autotuner`: every autotuned kernel asks the installed resolver for its config.

Triton's `Autotuner.run` calls `prune_configs` only on a key it has not cached, and when pruning leaves a
single config it uses it (Triton 3.8+ without timing it; 3.6 and 3.7 still time it once, which `_bench`
answers without running). Replacing `prune_configs` therefore costs nothing on the hot path: once per key
the resolver decides; a hit is launched, a miss is measured here through the kernel's own `do_bench` (a
wall clock under the interpreter) and recorded with the resolver; Triton caches the answer itself. The
launch that follows a served config goes through a one-shot wrapper: if it raises, the resolver refuses the
config and the key is tuned as Triton would; later launches are Triton's own, untouched. Kernels defined
before or after `patch()` are covered: the methods are replaced on the class. Under the interpreter, where
Triton's own benchmarker needs a GPU driver, configs are timed with a wall clock, served or not.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tuned_kernels import internals, model, resolving
from tuned_kernels.decision import Decision, Measured, candidates, launched
from tuned_kernels.errors import TunedKernelsError, one_line
from tuned_kernels.prediction import Tiling
from tuned_kernels.resolving import Compiled
from tuned_kernels.search import contenders
from tuned_kernels.triton_edge import cache_manager, measuring, shapes
from tuned_kernels.triton_edge.benchmarker import WallClockBenchmarker
from tuned_kernels.triton_edge.compile import artifact_of, resident_of, warmup
from tuned_kernels.triton_edge.interpreter import defined_before_interpreting, interpret_instead, interpreting
from tuned_kernels.triton_edge.keys import (
    autotuner_class,
    config_from_triton,
    kernel_identity,
    kernel_space,
    key_names,
    launches_persistent,
    tuning_key,
)

_original: dict[str, Any] = {}


def patch() -> None:
    """Autotuned kernels ask `resolving.current()` from now on (idempotent), where Triton's `Autotuner` is
    laid out as this patch expects (`shapes.TRITON_AUTOTUNER`; else said once, and Triton tunes them)."""
    cls = autotuner_class()
    if not _original and internals.holds(shapes.TRITON_AUTOTUNER, cls):
        _original.update(prune_configs=cls.prune_configs, _bench=cls._bench)
        cls.prune_configs, cls._bench = _prune_configs, _bench


@contextlib.contextmanager
def patched() -> Iterator[None]:
    """Patched within this block (and after it if it was before)."""
    was = bool(_original)
    patch()
    try:
        yield
    finally:
        if not was:
            unpatch()


def unpatch() -> None:
    cls = autotuner_class()
    if _original:
        cls.prune_configs, cls._bench = _original["prune_configs"], _original["_bench"]
        _original.clear()


def _prune_configs(self: Any, kwargs: dict[str, Any]) -> list[Any]:
    """Edge -> decision -> (measure) -> sink: the config `Autotuner.run` launches for this key."""
    original = _original["prune_configs"]
    self.__dict__.pop("_tuned_kernels_chosen", None)
    resolver = resolving.current()
    if resolver is None:
        return list(original(self, kwargs))
    if defined_before_interpreting(self) and not interpret_instead(self):
        name = getattr(getattr(self, "base_fn", None), "__qualname__", "a kernel")
        raise TunedKernelsError(
            f"{name} was defined before tuned-kernels turned on Triton's interpreter (no GPU here): set "
            "TRITON_INTERPRET=1, or call tuned_kernels.enable() before the kernel's module is imported"
        )
    try:
        identity = kernel_identity(self)
        named = {**self.nargs, **kwargs}
        key = tuning_key(self, named)
        own = {config_from_triton(c): c for c in kernel_space(self, kwargs)}
    except Exception as exc:  # never break a launch: tuned here, as Triton would
        name = getattr(getattr(self, "base_fn", None), "__name__", "a kernel")
        resolver.warn(f"cannot read {name}'s key or configs, tuning normally: {_said(exc)}")
        winner, _ = benchmark(self, list(original(self, kwargs)), kwargs)
        return [winner]
    # Triton's own pruning for this key, run once and only when needed: a prediction picks among its
    # configs, a miss times them
    pruned = functools.cache(lambda: {config_from_triton(c): c for c in original(self, kwargs)})
    tiling = Tiling(tuple(key_names(self, named)), 0, launches_persistent(self))
    decision = resolver.decide(identity, key, own.__contains__, kept=lambda: list(pruned()), tiling=tiling)
    if decision.served:
        chosen = own[decision.configs[0]]
        _guard_next_launch(self, resolver, identity, key, decision, chosen)
    else:
        chosen = _measured(self, resolver, identity, key, decision, kwargs, pruned())
    self._tuned_kernels_chosen = chosen  # measured or served already: never timed again
    return [chosen]


def _measured(
    autotuner: Any,
    resolver: resolving.Resolver,
    identity: model.KernelIdentity,
    key: model.TuningKey,
    decision: Decision,
    kwargs: dict[str, Any],
    space: dict[model.Config, Any],
) -> Any:
    """A miss: the candidates (`space`, the configs Triton's own pruning leaves, less those known to fail)
    timed as `Autotuner.run` times them, recorded with the resolver; the config to launch."""
    tried = candidates(list(space), decision)
    named = {**autotuner.nargs, **kwargs}
    started = time.perf_counter()
    timings, screened = _timings(autotuner, space, tried, named, kwargs)
    seconds = time.perf_counter() - started
    ran = [c for c, t in timings.items() if t != float("inf")]  # what a bundle made of it predicts by
    resident = resident_of(autotuner, named, ran)
    measured = Measured(identity, key, decision, timings, seconds, screened=screened, resident=resident)
    kept = resolver.record(
        measured, None if interpreting() else functools.partial(_compiled, autotuner, named)
    )
    return space[launched(tried, measured, kept)]


def _timings(
    autotuner: Any,
    space: Mapping[model.Config, Any],
    tried: Sequence[model.Config],
    named: dict[str, Any],
    kwargs: dict[str, Any],
) -> tuple[dict[model.Config, float], int]:
    """The candidates compiled in parallel (measuring.py), timed briefly, and the few that could win timed
    in full as `Autotuner.run` times them; with how many were left out after the brief pass."""
    if len(tried) <= 1:
        return {}, 0
    measuring.compile_all(autotuner, named, tried, measuring.miss_jobs())
    if not measuring.screens(autotuner, len(tried)):
        return _by_config(space, benchmark(autotuner, [space[c] for c in tried], kwargs)[1]), 0
    with measuring.timed_briefly(autotuner):
        first = _by_config(space, benchmark(autotuner, [space[c] for c in tried], kwargs)[1])
    timed = contenders(first)
    failed = {c: t for c, t in first.items() if not math.isfinite(t)}
    # one config ran: its brief time stands (`benchmark` does not time a single config); none: nothing to time
    full = (
        _by_config(space, benchmark(autotuner, [space[c] for c in timed], kwargs)[1])
        if len(timed) > 1
        else {c: first[c] for c in timed}
    )
    return {**failed, **full}, len(tried) - len(timed) - len(failed)


def _by_config(space: Mapping[model.Config, Any], timings: Mapping[Any, float]) -> dict[model.Config, float]:
    by_value = {id(triton_config): c for c, triton_config in space.items()}
    return {by_value[id(t)]: ms for t, ms in timings.items()}


def _compiled(autotuner: Any, named: dict[str, Any], config: model.Config) -> Compiled:
    """The kernel this launch runs with `config`, compiled (from Triton's cache: it was just benchmarked)."""
    artifact, blobs = artifact_of(warmup(autotuner, named, config), config)
    return (artifact,), blobs


def _guard_next_launch(
    autotuner: Any,
    resolver: resolving.Resolver,
    identity: model.KernelIdentity,
    key: model.TuningKey,
    decision: Decision,
    chosen: Any,
) -> None:
    """`Autotuner.run` launches the served config right after pruning, through `self.fn.run`: that one
    launch goes through `first_launch` (an instance attribute that removes itself), so a config that cannot
    launch is refused and the key tuned, while later launches cost nothing extra."""
    fn = autotuner.fn
    launch_options = set(chosen.all_kwargs())

    def first_launch(*args: Any, **kwargs: Any) -> Any:
        fn.__dict__.pop("run", None)
        try:
            return fn.run(*args, **kwargs)
        except Exception as exc:
            autotuner.cache.pop(key, None)
            resolver.refuse(identity, key, decision, _said(exc))
            # the launch again, from the top: the key is a miss now, tuned without the refused config
            own = {k: v for k, v in kwargs.items() if k not in launch_options}
            return type(autotuner).run(autotuner, *args, **own)

    fn.run = first_launch


def _bench(self: Any, *args: Any, config: Any, **kwargs: Any) -> list[float]:
    """Triton 3.6's `Autotuner.run` times the pruned configs even when only one is left; the config the
    resolver chose is not timed again (Triton keeps it as the winner), every other call is Triton's own."""
    if self.__dict__.pop("_tuned_kernels_chosen", None) is config:
        return [0.0, 0.0, 0.0]
    _wall_clock_on_the_interpreter(self)
    result: list[float] = _original["_bench"](self, *args, config=config, **kwargs)
    return result


def benchmark(
    autotuner: Any, configs: Sequence[Any], kwargs: Mapping[str, Any]
) -> tuple[Any, dict[Any, float]]:
    """Times `configs` as `Autotuner.run` would (a wall clock under the interpreter, which has no device
    timer); returns the winner and each config's median in ms (inf for one that could not run)."""
    if len(configs) == 1:
        return configs[0], {configs[0]: 0.0}
    args = list(autotuner.nargs.values())
    _wall_clock_on_the_interpreter(autotuner)
    bench = _original.get("_bench") or autotuner_class()._bench
    start = time.time()
    with cache_manager.recording_paused():  # a capture keeps the winner's compile only
        timings = {config: bench(autotuner, *args, config=config, **kwargs) for config in configs}
    autotuner.bench_time = time.time() - start
    winner = builtins.min(timings, key=lambda c: timings[c])
    autotuner.pre_hook({**autotuner.nargs, **kwargs, **winner.all_kwargs()}, reset_only=True)
    autotuner.configs_timings = timings
    return winner, {config: float(t[0]) for config, t in timings.items()}


def _wall_clock_on_the_interpreter(autotuner: Any) -> None:
    """The interpreter has no device timer (Triton's default benchmarker needs a GPU driver): an autotuner
    that brought no `do_bench` of its own is timed with a wall clock there."""
    if interpreting() and autotuner._do_bench is None:
        autotuner.__dict__["do_bench"] = _wall_clock_do_bench


def _wall_clock_do_bench(kernel_call: Any, quantiles: Any = None, **_: Any) -> list[float]:
    ms = WallClockBenchmarker(min_reps=2, min_seconds=0.0)(kernel_call)
    return [ms, ms, ms]


def _said(exc: BaseException) -> str:
    return one_line(f"{type(exc).__name__}: {exc}", 120)
