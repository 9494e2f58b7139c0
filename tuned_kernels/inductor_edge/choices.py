"""Inductor's template choices, answered by the installed resolver.

`TunedChoices` is a `LookupTableChoices`: a look-up table the program set itself (`config.lookup_table`)
still answers first; where it has nothing, the resolver decides. A hit narrows the op's choices to the one
stored config, found among the choices Inductor itself generated for these inputs (so nothing is benchmarked
and nothing foreign is compiled); a miss leaves Inductor's choices as they are, and when Inductor has timed
them the feedback saver hands the timings of the missed key back to the resolver, which remembers the winner.

Several GEMMs of a graph may share one key (a model's q, k and v projections) and still end differently:
Inductor's scheduler fuses an epilogue into a Triton template for one of them and keeps ATen's kernel for
another, and where it times each of them, their winners differ by the noise of timing. So each GEMM's final
choice is remembered for that GEMM alone, at the key and its occurrence in the graph (`at_occurrence`), and
served there before the key's winner; the fusions into it are remembered there too (fusion.py), so a served
graph is the captured graph.
"""

from __future__ import annotations

import functools
import importlib
import weakref
from collections import Counter
from collections.abc import Callable, Generator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from torch._inductor.lookup_table import LookupTableChoices

from tuned_kernels import internals, model, resolving
from tuned_kernels.decision import Decision, Measured
from tuned_kernels.errors import owner_decides
from tuned_kernels.inductor_edge import fusion, shapes
from tuned_kernels.inductor_edge.hook_id import hook_uuid
from tuned_kernels.inductor_edge.keys import config_of, identity_of, key_of


@dataclass(frozen=True)
class _Missed:
    identity: model.KernelIdentity
    key: model.TuningKey
    occurrence_key: model.TuningKey
    config: model.Config
    decision: Decision


@dataclass
class _Lowering:
    """What this edge keeps between Inductor's calls into it, for the process (Inductor's objects, held
    weakly where they are its own): its only state."""

    # the choices handed to Inductor on a miss, until its autotuning reports their timings
    missed: weakref.WeakKeyDictionary[Any, _Missed] = field(default_factory=weakref.WeakKeyDictionary)
    # the timings last recorded per missed key, which the final choice of its GEMM is remembered with
    recorded: dict[model.EntrySlot, dict[model.Config, float]] = field(default_factory=dict)
    # the choices served, with the GEMM each was served for
    served: weakref.WeakKeyDictionary[Any, fusion.Gemm] = field(default_factory=weakref.WeakKeyDictionary)
    # per graph being lowered, how many GEMMs of each key it has had
    seen: weakref.WeakKeyDictionary[Any, Counter[model.TuningKey]] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    failed: set[str] = field(default_factory=set)  # what could not be done, said once


_state = _Lowering()


def at_occurrence(key: model.TuningKey, occurrence: int) -> model.TuningKey:
    """The key of one GEMM: the `occurrence`-th (from 0) with this key in its graph."""
    return (*key, f"occurrence {occurrence}")


def _occurrence_key(key: model.TuningKey) -> model.TuningKey:
    from torch._inductor.virtualized import V

    seen = _state.seen.setdefault(V.graph, Counter())
    occurrence = seen[key]
    seen[key] += 1
    return at_occurrence(key, occurrence)


class TunedChoices(LookupTableChoices):
    def uuid(self) -> str:
        """Inductor's FX-graph cache key for this class (graphs compiled with it may be reused)."""
        return hook_uuid()

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

    @staticmethod
    def can_fuse_vertical(scheduler: Any, node1: Any, node2: Any, shared_data_score: int) -> bool:
        """Into a served GEMM template, only the kinds of fusion its capture took (fusion.py)."""
        resolver = resolving.current()
        if resolver is not None:
            with _never_breaking_the_compile(resolver, "look up a GEMM's captured fusions"):
                return fusion.allows(resolver, node1, node2, _served_gemm)
        return True


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
        decision = resolver.decide(identity, asked, own.__contains__)
        if decision.served:
            served = own[decision.configs[0]]
            _state.served[served] = fusion.Gemm(identity, occurrence_key)
            return served
    for config, ktc in own.items():
        _state.missed[ktc] = _Missed(identity, key, occurrence_key, config, decision)
    return None


def _never_breaking_the_compile(resolver: resolving.Resolver, what: str) -> AbstractContextManager[None]:
    """Inductor's own choice stands where ours fails (a torch whose objects look otherwise): one warning."""
    return owner_decides(resolver.warn, what, "Inductor", _state.failed)


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
    entry = resolver.record(Measured(winner.identity, winner.key, winner.decision, measured))
    if entry is not None:
        _state.recorded[entry.slot] = measured


def remember_final_choice(resolver: resolving.Resolver, caller: Any) -> None:
    """The scheduler's final choice for a GEMM whose choices Inductor timed, remembered for that GEMM's
    occurrence in the graph, so that a served process takes it there and generates the same kernels. It may
    not be the key's winner: a Triton template slower alone but faster with an epilogue fused into it, ATen's
    kernel where the winning template's layout conflicts with its inputs', or the winner of this GEMM's own
    timings where Inductor timed each GEMM of a key (their winners differ by the noise of timing)."""
    missed = _missed_of(caller)
    if missed is None:
        return
    recorded = _state.recorded.get(model.slot_of(missed.identity, missed.key))
    if recorded is None or missed.config not in recorded:
        return
    resolver.record(
        Measured(missed.identity, missed.occurrence_key, missed.decision, recorded, chosen=missed.config)
    )


def watch_final_choices() -> None:
    """Inductor has no hook for the scheduler's final choice among a GEMM's timed choices, nor for the
    fusions it took, so the methods that take them are wrapped, once per process:
    `MultiTemplateBuffer.finalize_as_triton_caller` (a Triton template), `ExternKernelCaller.output_node`
    (ATen's kernel) and `Scheduler.finalize_multi_template_buffers` (run once fusion is done); each where
    this torch has it (`shapes.INDUCTOR_FINAL_CHOICES`), else said once."""
    triton_caller, aten_caller, scheduler = shapes.INDUCTOR_FINAL_CHOICES
    final_choice = "remember Inductor's final GEMM choice"
    _after(triton_caller, final_choice,
           lambda resolver, _buffer, caller: remember_final_choice(resolver, caller))  # fmt: skip
    _after(aten_caller, final_choice, remember_final_choice)
    _after(scheduler, "remember the fusions into timed GEMMs",
           lambda resolver, scheduler: fusion.record_timed(resolver, scheduler.nodes, _timed_gemm))  # fmt: skip


def _after(shape: internals.Shape, what: str, then: Callable[..., None]) -> None:
    """Wraps the one method of `shape` where it holds: once it has run, `then(resolver, *its arguments)`
    (where a resolver is installed; a failure of `then` is one warning, naming `what` it could not do)."""
    if not internals.holds(shape):
        return
    cls = getattr(importlib.import_module(shape.module), shape.owner)
    (method,) = shape.methods
    original = getattr(cls, method)
    if getattr(original, "tuned_kernels_wrapped", False):
        return

    @functools.wraps(original)
    def wrapped(*args: Any) -> Any:
        result = original(*args)
        resolver = resolving.current()
        if resolver is not None:
            with _never_breaking_the_compile(resolver, what):
                then(resolver, *args)
        return result

    wrapped.tuned_kernels_wrapped = True  # type: ignore[attr-defined]
    setattr(cls, method, wrapped)


def _ktc_of(made: Any) -> Any:
    """The `KernelTemplateChoice` a caller or a buffer was made from (Inductor's annotation), or None."""
    return getattr(made, "annotations", {}).get("ktc")


def _missed_of(caller: Any) -> _Missed | None:
    ktc = _ktc_of(caller)
    return _state.missed.get(ktc) if ktc is not None else None


def _timed_gemm(template: Any) -> fusion.Gemm | None:
    """The GEMM of a template buffer whose choices Inductor timed (a miss)."""
    from torch._inductor.ir import MultiTemplateBuffer

    if isinstance(template, MultiTemplateBuffer):
        for caller in template.choices:
            missed = _missed_of(caller)
            if missed is not None:
                return fusion.Gemm(missed.identity, missed.occurrence_key)
    return None


def _served_gemm(template: Any) -> fusion.Gemm | None:
    """The GEMM of a template buffer served its one choice."""
    ktc = _ktc_of(template)
    return _state.served.get(ktc) if ktc is not None else None
