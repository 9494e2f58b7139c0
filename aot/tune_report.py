"""What a tune is asked to do (`TuneOptions`) and what it did (`TuneReport`, and `merge_reports` for a run
shared by several processes or Dask tasks)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tuned_kernels import model
from tuned_kernels.decision import COMPILED_PREFIX


@dataclass(frozen=True)
class TuneOptions:
    strategy: str = "exhaustive"  # or "seeded"
    shard: tuple[int, int] = (0, 1)  # (index, count)
    time_budget_s: float | None = None
    jobs: int = 1  # compile threads
    seed: int = 0
    artifacts: str = "winners"  # none | winners | all (every config that passed its check)


@dataclass
class TuneReport:
    cases: int = 0
    tuned: int = 0
    resumed: int = 0
    other_kernel: int = 0  # cases whose op launches another family's kernel on this GPU (nothing to tune)
    configs_benchmarked: int = 0
    rejected: int = 0
    stopped_early: bool = False
    seconds: float = 0.0
    compile_seconds: float = 0.0  # waiting for a key's space to compile (not hidden behind measuring)
    benchmark_seconds: float = 0.0  # inside the benchmarker: the pure measuring time
    per_family: dict[str, int] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    artifacts: int = 0
    artifact_bytes: int = 0
    artifact_note: str = ""
    outputs: list[str] = field(default_factory=list)  # the results files written, where more than -o
    startup_seconds: float = 0.0  # of `seconds`, starting the engine that spreads the work (a Dask cluster)

    def add(self, family: str, entry: model.Entry) -> None:
        self.tuned += 1
        self.configs_benchmarked += entry.configs_benchmarked
        self.rejected += len(entry.rejected)
        self.artifacts += len(entry.artifacts)
        self.artifact_bytes += sum(a.size_bytes for a in entry.artifacts)
        self.per_family[family] = self.per_family.get(family, 0) + 1

    def add_searched(
        self, family: str, entries: Sequence[model.Entry]
    ) -> tuple[list[model.Entry], list[model.Entry]]:
        """Counts what a kernel's own search found: its tuned entries, and the compiled kernels kept beside
        them (returned in that order)."""
        compiled = [e for e in entries if e.kernel.name.startswith(COMPILED_PREFIX)]
        tuned = [e for e in entries if e not in compiled]
        for entry in tuned:
            self.add(family, entry)
        for entry in compiled:
            self.artifacts += len(entry.artifacts)
            self.artifact_bytes += sum(a.size_bytes for a in entry.artifacts)
        return tuned, compiled

    def artifacts_said(self, kept: str, apply: bool) -> str:
        """What became of the compiled kernels, given `--artifacts kept` and whether they apply here."""
        if kept == "none":
            return "not kept (--artifacts none)"
        if not apply:
            return "do not apply to the cpu target (Triton's interpreter compiles nothing)"
        return self.kept_said()

    def kept_said(self) -> str:
        return f"{self.artifacts} compiled kernels kept, {self.artifact_bytes} bytes"


def merge_reports(reports: Sequence[TuneReport], seconds: float) -> TuneReport:
    """The report of several participants that shared one run's keys: counts and times added up (times
    are each participant's own, so the sums exceed the wall time `seconds`)."""
    merged = TuneReport(seconds=seconds)
    for r in reports:
        merged.cases = max(merged.cases, r.cases)
        merged.tuned += r.tuned
        merged.resumed += r.resumed
        merged.other_kernel += r.other_kernel
        merged.configs_benchmarked += r.configs_benchmarked
        merged.rejected += r.rejected
        merged.stopped_early |= r.stopped_early
        merged.compile_seconds += r.compile_seconds
        merged.benchmark_seconds += r.benchmark_seconds
        merged.failed += r.failed
        merged.artifacts += r.artifacts
        merged.artifact_bytes += r.artifact_bytes
        for family, n in r.per_family.items():
            merged.per_family[family] = merged.per_family.get(family, 0) + n
    notes = [r.artifact_note for r in reports if r.artifact_note]
    kept = merged.artifacts or any("kept," in n for n in notes)
    merged.artifact_note = merged.kept_said() if kept else (notes or [""])[0]
    return merged


@dataclass
class TuneTimes:
    """Seconds a run spent waiting for compiles (those not hidden behind measuring), and measuring."""

    compile: float = 0.0
    benchmark: float = 0.0
