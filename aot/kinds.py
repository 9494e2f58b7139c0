"""What the tuner does differently per kind of tunable kernel, one small class per kind, chosen by
`kind_of(kernel)`: how its candidates are timed, and what else answers while they are measured.

- An `@triton.autotune` kernel: its configs timed on the device, nothing else answering.
- An `ImplementationChoice` (choice.py): its implementations timed with their launches counted (a program
  calling the op in a loop runs at the pace of the host or the device, whichever is slower), and the
  kernels tuned earlier in this run launching with their winners, so each implementation is at its best.
- A Helion kernel: it searches its configs itself (`searches_itself`), with its own settings; the tuner
  runs the op and keeps what the search found (tuner.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

from tuned_kernels.aot.answers import TunedAnswers

from tuned_kernels import model, resolving
from tuned_kernels.choice import ImplementationChoice
from tuned_kernels.triton_edge import autotuner
from tuned_kernels.triton_edge.benchmarker import Benchmarker, launch_inclusive


class KernelKind(Protocol):
    searches_itself: bool  # the op's first run searches its configs (nothing to probe, prune or force)

    def benchmarker(self, base: Benchmarker) -> Benchmarker:
        """What times this kernel's candidates, given the tuner's own benchmarker."""
        ...

    def measuring(self, tuned: Iterable[model.Entry]) -> AbstractContextManager[None]:
        """Around measuring this kernel: `tuned` holds what this run tuned before it."""
        ...


class AutotunedKernel:
    searches_itself = False

    def benchmarker(self, base: Benchmarker) -> Benchmarker:
        return base

    def measuring(self, tuned: Iterable[model.Entry]) -> AbstractContextManager[None]:
        return contextlib.nullcontext()


class ChoiceOfImplementations:
    searches_itself = False

    def benchmarker(self, base: Benchmarker) -> Benchmarker:
        return launch_inclusive(base)

    def measuring(self, tuned: Iterable[model.Entry]) -> AbstractContextManager[None]:
        return _answering(tuned)


class SearchingKernel(AutotunedKernel):
    searches_itself = True


def kind_of(kernel: Any) -> KernelKind:
    if isinstance(kernel, ImplementationChoice):
        return ChoiceOfImplementations()
    if type(kernel).__module__.startswith("helion."):  # a helion.Kernel, known without importing Helion
        return SearchingKernel()
    return AutotunedKernel()


@contextlib.contextmanager
def _answering(entries: Iterable[model.Entry]) -> Iterator[None]:
    """Within this block, kernels tuned in this run launch with their winners."""
    with autotuner.patched(), resolving.installed(TunedAnswers(entries)):
        yield
