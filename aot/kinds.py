"""What the tuner does differently per kind of tunable kernel, one small class per kind, chosen by
`kind_of(kernel)`: how its candidates are timed, and what else answers while they are measured.

- An `@triton.autotune` kernel: its configs timed on the device, nothing else answering.
- An `ImplementationChoice` (choice.py): its implementations timed with their launches counted (a program
  calling the op in a loop runs at the pace of the host or the device, whichever is slower), and the
  kernels tuned earlier in this run launching with their winners, so each implementation is at its best.
- A Helion kernel: it searches its configs itself (`searches_itself`), with its own settings; the tuner
  runs the op and keeps what the search found, checked against the reference (`tune_by_its_search`).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from tuned_kernels.aot.answers import SearchedAnswers, TunedAnswers
from tuned_kernels.aot.tune_report import TuneOptions, TuneTimes
from tuned_kernels.aot.work import (
    CHECK_SEED_OFFSET,
    NoValidConfig,
    WorkItem,
    artifacts_apply,
    first_line,
    mismatch,
    problem_size,
)

from tuned_kernels import model, resolving
from tuned_kernels.choice import ImplementationChoice
from tuned_kernels.decision import compiled_kernel_entry
from tuned_kernels.helion_edge import hooks as helion_hooks
from tuned_kernels.triton_edge import autotuner
from tuned_kernels.triton_edge.benchmarker import Benchmarker, launch_inclusive
from tuned_kernels.triton_edge.cache_manager import recording_compiles


class TuningContext(Protocol):
    """What a kernel kind's own tuning uses of the tuner (tuner.Tuner is one)."""

    target: model.Target
    device: Any
    options: TuneOptions
    times: TuneTimes
    blobs: dict[str, bytes]

    def generator(self, offset: int) -> Any: ...


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

    def tune_by_its_search(
        self, tuner: TuningContext, item: WorkItem, done: dict[model.EntrySlot, model.Entry]
    ) -> list[model.Entry]:
        """Runs the op of a kernel that searches its configs itself (a Helion kernel: its own search, with
        its own settings), keeps what the search found, with the kernels Triton compiled outside the search,
        and checks the winner's output against the reference on fresh inputs. [] when every key the op
        reached is in `done` already, or had its config set already (nothing was searched)."""
        family = item.family
        helion_hooks.install_when_imported()
        answers, compiled = SearchedAnswers(done.values()), []

        def keep(artifact: model.Artifact, blobs: dict[str, bytes], name: str) -> None:
            tuner.blobs.update(blobs)
            compiled.append(compiled_kernel_entry(name, artifact))

        keeps = tuner.options.artifacts != "none" and artifacts_apply(tuner.target)
        inputs = family.make_inputs(item.case, tuner.device, tuner.generator(0))
        check_inputs = family.make_inputs(item.case, tuner.device, tuner.generator(CHECK_SEED_OFFSET))
        t0 = time.monotonic()
        try:
            with (
                resolving.installed(answers),
                recording_compiles(keep) if keeps else contextlib.nullcontext(),
            ):
                family.run(inputs)
                # the same specialization: the config found launches, nothing is searched again
                out = family.run(check_inputs)
        except Exception as exc:
            raise NoValidConfig(
                f"{family.name} {item.case.id}: {type(exc).__name__}: {first_line(exc)}"
            ) from exc
        finally:
            tuner.times.benchmark += time.monotonic() - t0
        found = list(answers.kept.values())
        if not found:
            return []
        reason = mismatch(out, family.reference(check_inputs), family.tolerance)
        if reason is not None:
            raise NoValidConfig(f"{family.name} {item.case.id}: the config its search found: {reason}")
        return [*found, *compiled]


def longest_first(items: Sequence[WorkItem]) -> list[int]:
    """The indices of `items` in the order that keeps GPUs busy when several take keys from one list: the
    longest first (the most configs to time, then the largest problem), so the keys left when the first
    GPU runs out of work are short ones. Kernels that search their configs themselves count as the
    longest; keys of implementation choices stay last, after the kernels whose winners they time. Stable."""

    def cost(i: int) -> tuple[int, float, float]:
        kind = kind_of(items[i].family.kernel)
        if isinstance(kind, ChoiceOfImplementations):
            return (0, 0.0, 0.0)
        configs = math.inf if kind.searches_itself else len(getattr(items[i].family.kernel, "configs", ()))
        return (1, configs, problem_size(items[i].case))

    return sorted(range(len(items)), key=cost, reverse=True)


def is_choice(item: WorkItem) -> bool:
    """Whether `item` is an implementation choice (tuned after the kernels it chooses between)."""
    return isinstance(kind_of(item.family.kernel), ChoiceOfImplementations)


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
