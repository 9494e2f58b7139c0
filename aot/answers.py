"""The tuner's resolver: kernels tuned earlier in this run launch with their winners (an implementation
choice is measured with its implementations at their best); anything else is measured, never kept."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from tuned_kernels import model
from tuned_kernels.decision import Decision
from tuned_kernels.errors import warn
from tuned_kernels.resolving import Compiled, Resolved

T = TypeVar("T")


class TunedAnswers:
    def __init__(self, entries: Iterable[model.Entry]) -> None:
        self.entries = {e.slot: e for e in entries}

    def resolve(
        self,
        identity: model.KernelIdentity,
        key: model.TuningKey,
        own: Mapping[model.Config, T],
        measure: Callable[[Sequence[T]], Mapping[T, float]],
        tune_space: Callable[[], Mapping[model.Config, T]] | None = None,
        compiled: Callable[[model.Config], Compiled] | None = None,
    ) -> Resolved[T]:
        decision = self.serve(identity, key, own.__contains__)
        if decision.served:
            return Resolved(own[decision.configs[0]], decision)
        values = list((tune_space() if tune_space is not None else own).values())
        if len(values) == 1:
            return Resolved(values[0], Decision("miss"))
        timings = measure(values)
        return Resolved(min(timings, key=lambda v: timings[v]), Decision("miss"))

    def serve(
        self, identity: model.KernelIdentity, key: model.TuningKey, fits: Callable[[model.Config], bool]
    ) -> Decision:
        entry = self.entries.get(model.slot_of(identity, key))
        if entry is not None and fits(entry.best):
            return Decision("hit", (entry.best,), "this run")
        return Decision("miss")

    def decide(
        self, identity: model.KernelIdentity, key: model.TuningKey, fits: Callable[[model.Config], bool]
    ) -> Decision:
        return self.serve(identity, key, fits)  # the tuner counts nothing

    def record(
        self,
        identity: model.KernelIdentity,
        key: model.TuningKey,
        timings: Mapping[model.Config, float],
        decision: Decision,
        compiled: Callable[[model.Config], Compiled] | None = None,
        chosen: model.Config | None = None,
    ) -> model.Entry | None:
        return None  # the tuner keeps only what it tunes itself

    def refuse(
        self, identity: model.KernelIdentity, key: model.TuningKey, decision: Decision, why: str
    ) -> None:
        self.entries.pop(model.slot_of(identity, key), None)
        self.warn(f"{identity.name}: the config tuned for {key} failed to launch ({why})")

    def warn(self, message: str) -> None:
        warn(message)
