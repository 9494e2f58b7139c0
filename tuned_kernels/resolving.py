"""Who answers "which config?" for this process: the `Resolver` that `enable()` installed, or none.

Autotuned kernels (through the Triton edge's hook), `ImplementationChoice` ops and Inductor's GEMM choices
(through the Inductor edge's hooks) ask `current()`; with
nothing installed they behave exactly as without tuned-kernels. The registry (serving, capturing, coverage)
and the tuner (answering from what it just tuned) are resolvers. This is the only process-wide state.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from tuned_kernels import model
from tuned_kernels.decision import Decision

T = TypeVar("T")
Compiled = tuple[tuple[model.Artifact, ...], dict[str, bytes]]


@dataclass(frozen=True)
class Resolved(Generic[T]):
    chosen: T
    decision: Decision


class Resolver(Protocol):
    def resolve(
        self,
        identity: model.KernelIdentity,
        key: model.TuningKey,
        own: Mapping[model.Config, T],
        measure: Callable[[Sequence[T]], Mapping[T, float]],
        tune_space: Callable[[], Mapping[model.Config, T]] | None = None,
        compiled: Callable[[model.Config], Compiled] | None = None,
    ) -> Resolved[T]:
        """The config to launch with: a stored one of `own` (the kernel's configs, by value), or the fastest
        of `tune_space()` (asked only on a miss; default `own`) as `measure` times them, remembered;
        `compiled` gives the winner's compiled kernel where the resolver keeps them."""
        ...

    def serve(
        self, identity: model.KernelIdentity, key: model.TuningKey, fits: Callable[[model.Config], bool]
    ) -> Decision:
        """For a caller that measures on its own (Inductor): the stored config to launch with, counted as
        served, or the miss to measure (then handed to `record`). `fits` says which configs it offers."""
        ...

    def decide(
        self, identity: model.KernelIdentity, key: model.TuningKey, fits: Callable[[model.Config], bool]
    ) -> Decision:
        """As `serve`, but not counted: for a decision that is part of one already counted (the fusions
        into a GEMM served its choice)."""
        ...

    def record(
        self,
        identity: model.KernelIdentity,
        key: model.TuningKey,
        timings: Mapping[model.Config, float],
        decision: Decision,
        compiled: Callable[[model.Config], Compiled] | None = None,
        chosen: model.Config | None = None,
    ) -> model.Entry | None:
        """A miss measured: counted, and its winner remembered (None when nothing ran). `chosen`: a caller
        that chose on more than these timings (Inductor fusing an epilogue into a template) says which
        config it finally took, after recording the same timings once without; that entry replaces the
        first."""
        ...

    def refuse(
        self, identity: model.KernelIdentity, key: model.TuningKey, decision: Decision, why: str
    ) -> None:
        """A config served for this key failed to launch: never serve or try it again here."""
        ...

    def warn(self, message: str) -> None: ...


_slot: list[Resolver | None] = [None]


def current() -> Resolver | None:
    return _slot[0]


def install(resolver: Resolver | None) -> None:
    _slot[0] = resolver


@contextlib.contextmanager
def installed(resolver: Resolver | None) -> Iterator[None]:
    """Within this block `resolver` answers (None: nothing does, as without tuned-kernels)."""
    saved = _slot[0]
    _slot[0] = resolver
    try:
        yield
    finally:
        _slot[0] = saved
