"""Helion's autotune cache, answered by the installed resolver.

Helion asks its autotune cache (`AutotuneCacheBase.get`) before it searches a kernel's configs, and hands
it the winner (`put`) after. `TunedKernelsCache` asks the resolver first: a hit is the stored config, once
the kernel's own config spec accepts it and it compiles (so nothing is searched or timed); otherwise Helion's
own local cache answers as without tuned-kernels; failing that, Helion's own search runs with the user's
settings, and its winner goes to Helion's local cache and to the resolver's sink (the overlay when serving,
the `-o` file when capturing). Compiles made while Helion searches are not kept by a capture: only the
winner's, which Helion compiles once the search is done.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from helion.autotuner.base_cache import AutotuneCacheBase
from helion.autotuner.local_cache import LocalAutotuneCache

from tuned_kernels import model, resolving
from tuned_kernels.decision import Decision, Measured
from tuned_kernels.errors import one_line, owner_decides
from tuned_kernels.helion_edge import keys
from tuned_kernels.triton_edge.cache_manager import recording_paused

NAME = "TunedKernelsCache"  # what `autotune_cache=` / HELION_AUTOTUNE_CACHE names it by


@dataclass(frozen=True)
class _Asked:
    identity: model.KernelIdentity
    key: model.TuningKey
    decision: Decision


class TunedKernelsCache(AutotuneCacheBase):  # type: ignore[misc]  # Helion has no type stubs
    def __init__(self, autotuner: Any, *, autotuner_factory: Callable[[], Any] | None = None) -> None:
        super().__init__(autotuner, autotuner_factory=autotuner_factory)
        self.local = _helions_local_cache(autotuner, autotuner_factory)
        self.resolver = resolving.current()
        self.asked: _Asked | None = None
        self.served = False
        self.seconds = 0.0

    def get(self) -> Any | None:
        if self.resolver is not None and not _several_shapes(self.args):
            with _never_breaking_the_kernel(self.resolver, "look up a Helion kernel's config"):
                served = self._served(self.resolver)
                if served is not None:
                    self.served = True
                    return served
        config = self.local.get() if self.local is not None else None
        if config is not None and self.asked is not None and self.asked.decision.reason == "capturing":
            self._record(config, measured=False)  # a capture keeps what Helion's own cache answers too
        return config

    def put(self, config: Any) -> None:
        if self.local is not None:
            self.local.put(config)
        if self.asked is None and self.resolver is not None and not _several_shapes(self.args):
            # Helion searched without reading its cache (HELION_FORCE_AUTOTUNE, a search policy that reads
            # none): the resolver is asked now, and its miss is this search
            with _never_breaking_the_kernel(self.resolver, "keep a Helion kernel's config"):
                identity, key = keys.identity_of(self.kernel.kernel), keys.key_of(self.kernel, self.args)
                decision = self.resolver.decide(identity, key, lambda _: False, counted=False)
                self.asked = _Asked(identity, key, decision)
        if self.asked is not None:
            self._record(config, measured=True)

    def _run_autotune_trials(self, *, skip_cache: bool = False) -> Any:
        start = time.monotonic()
        try:
            with recording_paused():  # a capture keeps the winner's compile only
                return super()._run_autotune_trials(skip_cache=skip_cache)
        finally:
            self.seconds = time.monotonic() - start

    def _served(self, resolver: resolving.Resolver) -> Any | None:
        bound = self.kernel
        identity, key = keys.identity_of(bound.kernel), keys.key_of(bound, self.args)
        decision = resolver.decide(
            identity, key, lambda c: keys.helion_config_of(c, bound.config_spec) is not None
        )
        self.asked = _Asked(identity, key, decision)
        if not decision.served:
            return None
        config = keys.helion_config_of(decision.configs[0], bound.config_spec)
        try:
            bound.compile_config(config, allow_print=False)  # compiled now rather than at the first launch
        except Exception as exc:
            resolver.refuse(identity, key, decision, one_line(f"{type(exc).__name__}: {exc}", 120))
            self.asked = _Asked(identity, key, Decision("miss", reason=decision.reason))
            return None
        return config

    def _record(self, config: Any, measured: bool) -> None:
        assert self.asked is not None and self.resolver is not None
        metrics = getattr(self.autotuner, "_autotune_metrics", None)
        tested = int(getattr(metrics, "num_configs_tested", 0) or 0) if measured else 0
        best_ms = float(getattr(self.autotuner, "best_perf_so_far", 0.0) or 0.0)
        stored = keys.config_of(config)
        timings = {stored: best_ms} if measured and 0 < best_ms < float("inf") else {}
        with _never_breaking_the_kernel(self.resolver, "keep a Helion kernel's config"):
            self.resolver.record(
                Measured(
                    self.asked.identity,
                    self.asked.key,
                    self.asked.decision,
                    timings,
                    seconds=self.seconds if measured else 0.0,
                    chosen=None if timings else stored,
                    screened=max(tested - len(timings), 0),
                )
            )

    # -- what Helion asks of a cache besides get and put -------------------------------------------------

    def _should_report_cache_hit(self) -> bool:
        return not self.served  # Helion's own hits are reported as Helion does; ours by tuned-kernels

    def _get_cache_key(self) -> Any:
        return self.local._get_cache_key() if self.local is not None else self.asked

    def _list_cache_entries(self) -> Sequence[tuple[str, Any]]:
        return self.local._list_cache_entries() if self.local is not None else []

    def _get_cache_info_message(self) -> str:
        return self.local._get_cache_info_message() if self.local is not None else ""


def _helions_local_cache(autotuner: Any, factory: Callable[[], Any] | None) -> LocalAutotuneCache | None:
    """Helion's own local cache for this kernel, where Helion can key it (not on a CPU device)."""
    try:
        return LocalAutotuneCache(autotuner, autotuner_factory=factory)
    except Exception:
        return None


def _several_shapes(args: Any) -> bool:
    """Helion's `autotune_multi` tunes one config over several shapes: not an entry of one key."""
    from helion.autotuner.benchmark_provider import _MultiShapeAutotuneArgs

    return isinstance(args, _MultiShapeAutotuneArgs)


def _never_breaking_the_kernel(resolver: resolving.Resolver, what: str) -> AbstractContextManager[None]:
    """Helion's own way stands where ours fails (a Helion whose objects look otherwise): one warning."""
    return owner_decides(resolver.warn, what, "Helion", _failed)


_failed: set[str] = set()  # what could not be done, said once per process
