"""The tuner's resolvers. `TunedAnswers`: kernels tuned earlier in this run launch with their winners (an
implementation choice is measured with its implementations at their best); anything else is measured, never
kept. `SearchedAnswers`: for a kernel that searches its configs itself (a Helion kernel), what its search
found is kept."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from tuned_kernels import model
from tuned_kernels.decision import Decision, Measured, measured_entry
from tuned_kernels.errors import warn
from tuned_kernels.prediction import Tiling
from tuned_kernels.resolving import Compiled


class TunedAnswers:
    def __init__(self, entries: Iterable[model.Entry]) -> None:
        self.entries = {e.slot: e for e in entries}

    def decide(
        self,
        identity: model.KernelIdentity,
        key: model.TuningKey,
        fits: Callable[[model.Config], bool],
        counted: bool = True,  # the tuner counts nothing
        kept: Callable[[], Sequence[model.Config]] | None = None,  # nothing predicted: every miss is tuned
        tiling: Tiling | None = None,
    ) -> Decision:
        entry = self.entries.get(model.slot_of(identity, key))
        if entry is not None and fits(entry.best):
            return Decision("hit", (entry.best,), "this run")
        return Decision("miss")

    def record(
        self, measured: Measured, compiled: Callable[[model.Config], Compiled] | None = None
    ) -> model.Entry | None:
        return None  # the tuner keeps only what it tunes itself

    def refuse(
        self, identity: model.KernelIdentity, key: model.TuningKey, decision: Decision, why: str
    ) -> None:
        self.entries.pop(model.slot_of(identity, key), None)
        self.warn(f"{identity.name}: the config tuned for {key} failed to launch ({why})")

    def step_aside(self, kernel: str, why: str) -> None:
        self.warn(f"{kernel}: not tuned here ({why})")

    def warn(self, message: str) -> None:
        warn(message)


class SearchedAnswers(TunedAnswers):
    """A key this run or the results file holds already is answered from there (nothing is searched); any
    other is a miss, which the kernel's own search answers, or its own cache (a miss while capturing: what
    its cache holds is kept too). Every config found is kept in `kept`, once per key."""

    def __init__(self, entries: Iterable[model.Entry]) -> None:
        super().__init__(entries)
        self.kept: dict[model.EntrySlot, model.Entry] = {}
        self.answered = 0

    def decide(
        self,
        identity: model.KernelIdentity,
        key: model.TuningKey,
        fits: Callable[[model.Config], bool],
        counted: bool = True,
        kept: Callable[[], Sequence[model.Config]] | None = None,
        tiling: Tiling | None = None,
    ) -> Decision:
        decision = super().decide(identity, key, fits, counted, kept, tiling)
        if decision.served:
            self.answered += 1
            return decision
        return Decision("miss", reason="capturing")

    def record(
        self, measured: Measured, compiled: Callable[[model.Config], Compiled] | None = None
    ) -> model.Entry | None:
        entry = measured_entry(measured, model.FoundBy.CAPTURED)
        if entry is not None:
            self.kept[entry.slot] = entry
        return entry
