"""The units of a tune: a work item (one case of one kernel family), the items of a corpus and of a shard,
which of them this process takes (`Claims`), and how a config's output is judged against the reference."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Protocol

from tuned_kernels.aot.corpus import Case, Corpus, KernelFamily

from tuned_kernels import model
from tuned_kernels.triton_edge.keys import kernel_identity

CHECK_SEED_OFFSET = 1_000_003  # check inputs are drawn apart from benchmark inputs
Probed = tuple[model.TuningKey, dict[str, Any], dict[str, Any]]  # key, named launch arguments, inputs


@dataclass(frozen=True)
class WorkItem:
    family: KernelFamily
    case: Case


def work_items(corpus: Corpus, shape_set: str, shard: tuple[int, int]) -> list[WorkItem]:
    """Every (family, case) in a fixed order; shard i of n takes every n-th, starting at i."""
    items = [WorkItem(f, c) for f in corpus for c in f.cases(shape_set)]
    index, count = shard
    return [item for i, item in enumerate(items) if i % count == index]


def problem_size(case: Case) -> float:
    """The product of a case's numbers (its problem size, as far as its parameters tell)."""
    numbers = [v for _, v in case.params if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    return float(math.prod(numbers))


def this_gpu(target: model.Target) -> str:
    """This process's device as a time split names it: `cpu`, or `GPU <id>` by the id CUDA_VISIBLE_DEVICES
    gives the first visible GPU."""
    return "cpu" if target.arch == "cpu" else f"GPU {visible_device_id(0)}"


def visible_device_id(gpu: int) -> str:
    """The device id a process for this process's `gpu`-th visible GPU must see."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        if gpu < len(ids):
            return ids[gpu]
    return str(gpu)


class Claims(Protocol):
    """Which work items this process tunes, when several share one run's items (one per GPU)."""

    def take(self, index: int) -> bool:
        """True: item `index` is this process's (asked once, when the run reaches it)."""
        ...


class _EveryItem:
    def take(self, index: int) -> bool:
        return True


EVERY_ITEM: Claims = _EveryItem()


def slot_of(item: WorkItem, probed: Probed) -> model.EntrySlot:
    identity = kernel_identity(item.family.kernel)
    return model.slot_of(identity, probed[0])


def artifacts_apply(target: model.Target) -> bool:
    """Compiled kernels exist for GPU targets; the cpu target runs Triton's interpreter."""
    return target.arch != "cpu"


class NoValidConfig(Exception):
    pass


def mismatch(out: Any, reference: Any, tolerance: tuple[float, float]) -> str | None:
    """None when `out` matches `reference` within (atol, rtol) everywhere; else why not."""
    import torch

    if out.shape != reference.shape:
        return f"wrong shape {tuple(out.shape)}, expected {tuple(reference.shape)}"
    # compared where the output lives: copying a large output to the host per config would dominate a tune
    got = out.detach().to(torch.float64)
    want = reference.detach().to(got.device, torch.float64)
    atol, rtol = tolerance
    error = (got - want).abs()
    bad = ~(error <= atol + rtol * want.abs())  # NaN (an unwritten, poisoned element) counts as bad
    if bool(bad.any()):
        worst = float(torch.nan_to_num(error, nan=float("inf")).max())
        return f"wrong numbers: {int(bad.sum())} of {bad.numel()} elements off, max error {worst:.3g}"
    return None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else ""
