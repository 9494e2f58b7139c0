"""The corpus API: what a tunable kernel family tells the tuner (corpus_loader.py loads corpora).

A `KernelFamily` names an `@triton.autotune` kernel, makes inputs for a `Case` (one shape and dtype),
runs the op on them, and gives a higher-precision reference with tolerances. Named shape sets (`quick` for
the CPU and CI, `full` for GPU runners) list the cases. A corpus is a sequence of families; user corpora
are `package.module:NAME` or `path/to/file.py[:NAME]` (NAME defaults to CORPUS).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tuned_kernels.errors import CorpusError

Inputs = dict[str, Any]


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` (shard I of N, 0 <= I < N) as (I, N); ValueError saying what was expected."""
    index, _, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise ValueError(f"--shard wants I/N, e.g. 0/4, got {text!r}") from None
    if not 0 <= i < n:
        raise ValueError(f"--shard {text}: need 0 <= I < N")
    return (i, n)


@dataclass(frozen=True)
class Case:
    """One point to tune: shape and dtype parameters, named by a stable id."""

    params: tuple[tuple[str, Any], ...]

    @staticmethod
    def of(**params: Any) -> Case:
        return Case(tuple(params.items()))

    @property
    def id(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.params)

    def __getitem__(self, name: str) -> Any:
        return dict(self.params)[name]


@dataclass(frozen=True)
class KernelFamily:
    name: str
    kernel: Any  # the @triton.autotune kernel the op launches
    make_inputs: Callable[[Case, Any, Any], Inputs]  # (case, device, torch.Generator) -> inputs
    run: Callable[[Inputs], Any]  # launches the op on the inputs, returns its output tensor
    reference: Callable[[Inputs], Any]  # the same function in higher precision
    tolerance: tuple[float, float]  # (atol, rtol) against the reference
    shapes: Mapping[str, Sequence[Case]] = field(default_factory=dict)

    def cases(self, shape_set: str) -> Sequence[Case]:
        if shape_set not in self.shapes:
            raise CorpusError(
                f"kernel family {self.name!r} has no shape set {shape_set!r} "
                f"(it has: {', '.join(self.shapes) or 'none'})"
            )
        return self.shapes[shape_set]


Corpus = Sequence[KernelFamily]


def distinct_runs(corpus: Corpus, shape_set: str) -> list[tuple[KernelFamily, Case]]:
    """Every (family, case) of `shape_set`, less those an earlier family already makes the same inputs for:
    families that tune the kernels of one op on the same cases (matmul's tile and copy-engine kernels, of
    which the op launches one per GPU) have each case run once."""
    runs, seen = [], set()
    for family in corpus:
        for case in family.cases(shape_set):
            if (family.make_inputs, case) not in seen:
                seen.add((family.make_inputs, case))
                runs.append((family, case))
    return runs
