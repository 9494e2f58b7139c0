"""Inductor's template choices, answered by the installed resolver.

`TunedChoices` is a `LookupTableChoices`: a look-up table the program set itself (`config.lookup_table`)
still answers first; where it has nothing, the resolver decides. A hit narrows the op's choices to the one
stored config, found among the choices Inductor itself generated for these inputs (so nothing is benchmarked
and nothing foreign is compiled); a miss leaves Inductor's choices as they are, and when Inductor has timed
them the feedback saver hands the timings of the missed key back to the resolver, which remembers the winner.

Several GEMMs of a graph may share one key (a model's q, k and v projections) and still end differently:
Inductor's scheduler fuses an epilogue into a Triton template for one of them and keeps ATen's kernel for
another. Such a final choice is remembered for that GEMM alone, at the key and its occurrence in the graph
(`at_occurrence`), and served there before the key's winner, so a served graph is the captured graph.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections import Counter
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

from torch._inductor.lookup_table import LookupTableChoices

from tuned_kernels import model, resolving
from tuned_kernels.decision import Decision
from tuned_kernels.errors import one_line
from tuned_kernels.inductor_edge.keys import config_of, identity_of, key_of


@dataclass(frozen=True)
class _Missed:
    identity: model.KernelIdentity
    key: model.TuningKey
    occurrence_key: model.TuningKey
    config: model.Config
    decision: Decision


@dataclass(frozen=True)
class _Recorded:
    timings: dict[model.Config, float]
    best: model.Config


# the choices handed to Inductor on a miss, until its autotuning reports their timings
_missed: weakref.WeakKeyDictionary[Any, _Missed] = weakref.WeakKeyDictionary()
# what was recorded per missed key, in case the scheduler finally takes another of the timed choices
_recorded: dict[model.EntrySlot, _Recorded] = {}
# per graph being lowered, how many GEMMs of each key it has had
_seen: weakref.WeakKeyDictionary[Any, Counter[model.TuningKey]] = weakref.WeakKeyDictionary()


def at_occurrence(key: model.TuningKey, occurrence: int) -> model.TuningKey:
    """The key of one GEMM: the `occurrence`-th (from 0) with this key in its graph."""
    return (*key, f"occurrence {occurrence}")


def _occurrence_key(key: model.TuningKey) -> model.TuningKey:
    from torch._inductor.virtualized import V

    seen = _seen.setdefault(V.graph, Counter())
    occurrence = seen[key]
    seen[key] += 1
    return at_occurrence(key, occurrence)


class TunedChoices(LookupTableChoices):
    def uuid(self) -> str:
        """Inductor's FX-graph cache key for this class (graphs compiled with it may be reused)."""
        from tuned_kernels.version import TOOL_VERSION

        return f"tuned-kernels {TOOL_VERSION}"

    def _fallback(
        self,
        template_choices: dict[str, Generator[Any, None, None]],
        kernel_inputs: Any,
        templates: list[Any],
        op_name: str,
        kwarg_overrides: dict[str, dict[str, Any]] | None = None,
    ) -> list[Any]:
        offered = {uid: list(choices) for uid, choices in template_choices.items()}
        resolver = resolving.current()
        if resolver is not None:
            with _never_breaking_the_compile(resolver, "look up Inductor's GEMM choice"):
                served = _serve(resolver, offered, kernel_inputs, op_name)
                if served is not None:
                    return [served]
        return super()._fallback(
            {uid: (c for c in choices) for uid, choices in offered.items()},
            kernel_inputs,
            templates,
            op_name,
            kwarg_overrides,
        )


def _serve(
    resolver: resolving.Resolver, offered: dict[str, list[Any]], kernel_inputs: Any, op_name: str
) -> Any | None:
    """The stored choice for these inputs among those Inductor offers; on a miss, None (and the offered
    choices are noted, so that their timings can be remembered)."""
    own: dict[model.Config, Any] = {}
    for choices in offered.values():
        for ktc in choices:
            config = config_of(ktc)
            if config is not None:
                own.setdefault(config, ktc)
    if not own:
        return None
    identity, key = identity_of(op_name), key_of(kernel_inputs)
    occurrence_key = _occurrence_key(key)
    for asked in (occurrence_key, key):
        decision = resolver.serve(identity, asked, own.__contains__)
        if decision.served:
            return own[decision.configs[0]]
    for config, ktc in own.items():
        _missed[ktc] = _Missed(identity, key, occurrence_key, config, decision)
    return None


_failed: set[str] = set()


@contextlib.contextmanager
def _never_breaking_the_compile(resolver: resolving.Resolver, what: str) -> Iterator[None]:
    """Inductor's own choice stands where ours fails (a torch whose objects look otherwise): one warning."""
    try:
        yield
    except Exception as exc:
        if what not in _failed:
            _failed.add(what)
            resolver.warn(f"could not {what}: {one_line(f'{type(exc).__name__}: {exc}')}; Inductor decides")


def remember_timings(
    timings: dict[Any, float],
    name: str,
    input_nodes: list[Any],
    choices: list[Any],
    profiled: Callable[[], dict[Any, float]],
    precompile_times: dict[Any, float] | None = None,
) -> None:
    """Inductor's feedback saver: the timings of a key that missed go to the resolver, which remembers the
    winner (the overlay when serving, the `-o` file when capturing)."""
    resolver = resolving.current()
    if resolver is None or not timings:
        return
    with _never_breaking_the_compile(resolver, "remember Inductor's GEMM timings"):
        _remember(resolver, timings)


def _remember(resolver: resolving.Resolver, timings: dict[Any, float]) -> None:
    winner = _missed_of(min(timings, key=lambda c: timings[c]))
    if winner is None:  # won by a choice the resolver never saw (a backend outside the templates)
        return
    measured = {}
    for caller, ms in timings.items():
        missed = _missed_of(caller)
        if missed is not None and (missed.identity, missed.key) == (winner.identity, winner.key):
            measured[missed.config] = float(ms)
    entry = resolver.record(winner.identity, winner.key, measured, winner.decision)
    if entry is not None:
        _recorded[entry.slot] = _Recorded(measured, entry.best)


def remember_final_choice(resolver: resolving.Resolver, caller: Any) -> None:
    """The scheduler's final choice for a GEMM, where it is not the key's recorded winner: a Triton template
    slower alone but faster with an epilogue fused into it, or ATen's kernel where the winning template's
    layout conflicts with its inputs'. It is remembered for that GEMM's occurrence in the graph, so that a
    served process takes it there (and generates the same kernels), and the key's other GEMMs the winner."""
    missed = _missed_of(caller)
    if missed is None:
        return
    recorded = _recorded.get(model.slot_of(missed.identity, missed.key))
    if recorded is None or recorded.best == missed.config or missed.config not in recorded.timings:
        return
    resolver.record(
        missed.identity, missed.occurrence_key, recorded.timings, missed.decision, chosen=missed.config
    )


def watch_final_choices() -> None:
    """Inductor has no hook for the scheduler's final choice among a GEMM's timed choices, so the two
    methods that take one are wrapped, once per process: `MultiTemplateBuffer.finalize_as_triton_caller`
    (a Triton template) and `ExternKernelCaller.output_node` (ATen's kernel)."""
    from torch._inductor.ir import MultiTemplateBuffer
    from torch._inductor.select_algorithm import ExternKernelCaller

    _after(MultiTemplateBuffer, "finalize_as_triton_caller", lambda _buffer, caller: caller)
    _after(ExternKernelCaller, "output_node", lambda caller: caller)


def _after(cls: type, method: str, caller_of: Callable[..., Any]) -> None:
    """Wraps `cls.method`: once it has run, the caller it took is remembered as a final choice."""
    original = getattr(cls, method)
    if getattr(original, "tuned_kernels_wrapped", False):
        return

    @functools.wraps(original)
    def wrapped(*args: Any) -> Any:
        result = original(*args)
        resolver = resolving.current()
        if resolver is not None:
            with _never_breaking_the_compile(resolver, "remember Inductor's final GEMM choice"):
                remember_final_choice(resolver, caller_of(*args))
        return result

    wrapped.tuned_kernels_wrapped = True  # type: ignore[attr-defined]
    setattr(cls, method, wrapped)


def _missed_of(caller: Any) -> _Missed | None:
    ktc = getattr(caller, "annotations", {}).get("ktc")
    return _missed.get(ktc) if ktc is not None else None
