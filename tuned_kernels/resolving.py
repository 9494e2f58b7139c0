"""Who answers "which config?" for this process: the `Resolver` that `enable()` installed, or none.

Every serving path is one straight line, the same for autotuned kernels (the Triton edge), implementation
choices (`choice.py`) and Inductor's GEMM choices (the Inductor edge):

    edge --decide--> Decision --(hit: launch it) / (miss: the edge measures the candidates)--record--> sink

`decide` answers from the bundles and the overlay (`decision.decide`, pure); `record` hands a measured miss
to the resolver's sink (the overlay when serving, the `-o` file when capturing) and returns the entry it
kept; `refuse` takes back a served config that failed to launch. With nothing installed, kernels behave
exactly as without tuned-kernels. The registry (serving, capturing, coverage) and the tuner (answering from
what it just tuned) are resolvers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from tuned_kernels import model
from tuned_kernels.decision import Decision, Measured
from tuned_kernels.prediction import Tiling

__all__ = ["Compiled", "Measured", "Resolver", "current", "install", "installed"]

Compiled = tuple[tuple[model.Artifact, ...], dict[str, bytes]]  # a config's compiled kernels and their files


class Resolver(Protocol):
    def decide(
        self,
        identity: model.KernelIdentity,
        key: model.TuningKey,
        fits: Callable[[model.Config], bool],
        counted: bool = True,
        kept: Callable[[], Sequence[model.Config]] | None = None,
        tiling: Tiling | None = None,
    ) -> Decision:
        """The stored config to launch with, or the miss to measure (then handed to `record`). `fits` says
        which configs the caller offers; `counted=False` for a decision that is part of one already counted
        (the fusions into a GEMM that was served); `kept`, the configs the kernel's own pruning keeps for
        this key, where a miss may be served a predicted config (none given: a miss is measured);
        `tiling`, how the kernel tiles its key's sizes into programs (the GPU's multiprocessors left to the
        resolver), which a prediction weighs its neighbours by."""
        ...

    def record(
        self, measured: Measured, compiled: Callable[[model.Config], Compiled] | None = None
    ) -> model.Entry | None:
        """A measured miss: counted, and its winner kept by the sink (None when nothing ran). `compiled`
        gives the winner's compiled kernel, asked only by a sink that keeps them (capture on a GPU)."""
        ...

    def refuse(
        self, identity: model.KernelIdentity, key: model.TuningKey, decision: Decision, why: str
    ) -> None:
        """A config served for this key failed to launch: never serve or try it again here."""
        ...

    def step_aside(self, kernel: str, why: str) -> None:
        """A kernel the resolver is not asked about, for `why` (its program chose its own cache)."""
        ...

    def warn(self, message: str) -> None: ...


# The process's resolver: the one piece of process-wide serving state (the others, each named where it
# lives, are caches of Triton's and Inductor's objects: see the edges).
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
