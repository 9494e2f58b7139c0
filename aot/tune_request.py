"""What `tune` was asked: the output, the corpus and its shape set, the families, and how to tune (as data,
so a worker process or a Dask task gets it as JSON). Light: imports no torch or Triton."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tuned_kernels.aot.tune_report import TuneOptions


@dataclass(frozen=True)
class TuneRequest:
    output: str
    corpus: str = "builtin"
    shapes: str = "quick"
    kernels: Sequence[str] = ()
    resume: bool = False
    seed_files: Sequence[str] = ()
    options: TuneOptions = field(default_factory=TuneOptions)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> TuneRequest:
        options = TuneOptions(**{**data["options"], "shard": tuple(data["options"]["shard"])})
        lists = {name: tuple(data[name]) for name in ("kernels", "seed_files")}
        return TuneRequest(**{**data, **lists, "options": options})
