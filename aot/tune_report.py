"""What a tune is asked to do (`TuneOptions`) and what it did (`TuneReport`, and `merge_reports` for a run
shared by several processes or Dask tasks), with where each GPU's time went (`GpuTime`, `time_split`)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tuned_kernels import model
from tuned_kernels.decision import COMPILED_PREFIX


@dataclass(frozen=True)
class TuneOptions:
    strategy: str = "exhaustive"  # or "seeded"
    shard: tuple[int, int] = (0, 1)  # (index, count)
    time_budget_s: float | None = None
    # compile threads; 0: this host's CPUs shared among the processes tuning on it (`shared_jobs`)
    jobs: int = 1
    seed: int = 0
    artifacts: str = "winners"  # none | winners | all (every config that passed its check)


COUNTS = (
    "tuned",
    "resumed",
    "other_kernel",
    "configs_benchmarked",
    "rejected",
    "artifacts",
    "artifact_bytes",
    "timed_by_do_bench",
)


def shared_jobs(options: TuneOptions, sharing: int) -> TuneOptions:
    """`options` with its compile threads set: as given, or (0) this host's CPUs divided among the `sharing`
    processes tuning on it, so that several GPUs' compile threads do not outnumber its cores (each process
    then waits for the interpreter lock to launch and time its kernels, and its GPU idles)."""
    if options.jobs > 0:
        return options
    return dataclasses.replace(options, jobs=max(1, usable_cpus() // max(1, sharing)))


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, where the OS has one; else the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


@dataclass
class TuneReport:
    cases: int = 0
    tuned: int = 0
    resumed: int = 0
    same_key: int = 0  # cases left out: the same key as another case of the run
    other_kernel: int = 0  # cases whose op launches another family's kernel on this GPU (nothing to tune)
    configs_benchmarked: int = 0
    rejected: int = 0
    stopped_early: bool = False
    seconds: float = 0.0
    compile_seconds: float = 0.0  # waiting for a key's space to compile (not hidden behind measuring)
    benchmark_seconds: float = 0.0  # inside the benchmarker: the pure measuring time
    timed_by_do_bench: int = 0  # configs whose call a CUDA graph could not capture (do_bench timed them)
    per_family: dict[str, int] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    artifacts: int = 0
    artifact_bytes: int = 0
    artifact_note: str = ""
    outputs: list[str] = field(default_factory=list)  # the results files written, where more than -o
    startup_seconds: float = 0.0  # of `seconds`, starting the engine that spreads the work (a Dask cluster)
    # of `startup_seconds`, when each step of the start was done, in seconds since the run began (Dask: the
    # cluster answering, the corpus loaded, the workers' kinds known, their warm-up done)
    startup_split: dict[str, float] = field(default_factory=dict)
    launched_instead: dict[str, list[str]] = field(default_factory=dict)  # family -> kernels its op launched
    gpus: list[GpuTime] = field(default_factory=list)  # each participant's time (one per GPU once merged)
    time_split: list[dict[str, Any]] = field(default_factory=list)  # per GPU, over the run's wall time

    def note_launched(self, family: str, kernel: str) -> None:
        """A case of `family` whose op launches `kernel` here instead of the family's own."""
        launched = self.launched_instead.setdefault(family, [])
        if kernel not in launched:
            launched.append(kernel)

    @staticmethod
    def from_json(data: dict[str, Any]) -> TuneReport:
        """A report as `dataclasses.asdict` wrote it (by a worker process or a Dask task)."""
        report = TuneReport(**{**data, "gpus": []})
        report.gpus = [GpuTime(**g) for g in data.get("gpus", [])]
        return report

    def since(self, earlier: TuneReport) -> TuneReport:
        """What this report counted after it stood at `earlier` (a copy of it, taken then)."""
        added = TuneReport(failed=self.failed[len(earlier.failed) :])
        for name in COUNTS:
            setattr(added, name, getattr(self, name) - getattr(earlier, name))
        for family, n in self.per_family.items():
            if n != earlier.per_family.get(family, 0):
                added.per_family[family] = n - earlier.per_family.get(family, 0)
        for family, names in self.launched_instead.items():
            for name in names:
                if name not in earlier.launched_instead.get(family, []):
                    added.note_launched(family, name)
        return added

    def times_only(self) -> TuneReport:
        """Its times and what became of the compiled kernels, without the counts (told apart, key by key)."""
        return TuneReport(
            cases=self.cases, seconds=self.seconds, stopped_early=self.stopped_early,
            compile_seconds=self.compile_seconds, benchmark_seconds=self.benchmark_seconds, gpus=self.gpus,
            artifact_note=self.artifact_note,
        )  # fmt: skip

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
        merged.same_key = max(merged.same_key, r.same_key)  # every participant left out the same cases
        merged.other_kernel += r.other_kernel
        merged.configs_benchmarked += r.configs_benchmarked
        merged.rejected += r.rejected
        merged.stopped_early |= r.stopped_early
        merged.compile_seconds += r.compile_seconds
        merged.benchmark_seconds += r.benchmark_seconds
        merged.failed += r.failed
        merged.artifacts += r.artifacts
        merged.artifact_bytes += r.artifact_bytes
        merged.timed_by_do_bench += r.timed_by_do_bench
        for family, n in r.per_family.items():
            merged.per_family[family] = merged.per_family.get(family, 0) + n
        for family, names in r.launched_instead.items():
            merged.launched_instead[family] = sorted({*merged.launched_instead.get(family, []), *names})
        merged.gpus += r.gpus
    notes = [r.artifact_note for r in reports if r.artifact_note]
    kept = merged.artifacts or any("kept," in n for n in notes)
    merged.artifact_note = merged.kept_said() if kept else (notes or [""])[0]
    return merged


@dataclass
class TuneTimes:
    """Seconds a run spent waiting for compiles (those not hidden behind measuring), inside the
    benchmarker, checking and timing configs in all, and probing keys."""

    compile: float = 0.0
    benchmark: float = 0.0
    measure: float = 0.0
    probe: float = 0.0
    queue: float = 0.0  # of `probe`: pruning a key's configs and handing them to the compile threads


@dataclass(frozen=True)
class GpuTime:
    """Where one participant's time went, on the GPU it tuned on. `began` and `ended` are wall-clock
    (time.time()) instants, comparable across the processes of one host: its first key's start and its
    last key's end."""

    gpu: str
    began: float
    ended: float
    keys: int = 0
    probing: float = 0.0  # making a key's inputs and finding its key and configs
    compiling: float = 0.0  # waiting for configs to compile, the GPU idle
    measuring: float = 0.0  # checking and timing configs: the GPU at work
    queueing: float = 0.0  # of probing: pruning a key's configs and handing them to the compile threads


def combined(times: Sequence[GpuTime]) -> list[GpuTime]:
    """One `GpuTime` per GPU, of the participants (Dask tasks) that ran on it, in the order GPUs first
    appear."""
    by_gpu: dict[str, GpuTime] = {}
    for t in times:
        seen = by_gpu.get(t.gpu)
        by_gpu[t.gpu] = t if seen is None else GpuTime(
            t.gpu,
            min(seen.began, t.began),
            max(seen.ended, t.ended),
            seen.keys + t.keys,
            seen.probing + t.probing,
            seen.compiling + t.compiling,
            seen.measuring + t.measuring,
            seen.queueing + t.queueing,
        )  # fmt: skip
    return list(by_gpu.values())


def time_split(times: Sequence[GpuTime], started: float, ended: float) -> list[dict[str, Any]]:
    """Each GPU's share of a run that went from `started` to `ended` (time.time()), in seconds: its
    start-up (until its first key), probing, compiling (waited for), measuring, and waiting (the rest:
    between keys and after its last until the run ended); `busy` is measuring over the time after its
    start-up."""
    split = []
    for t in combined(times):
        startup = max(0.0, t.began - started)
        after = max(ended - started - startup, 1e-9)
        waiting = max(0.0, after - t.probing - t.compiling - t.measuring)
        split.append(
            {
                **dataclasses.asdict(t),
                "startup": round(startup, 3),
                "waiting": round(waiting, 3),
                "busy": round(t.measuring / after, 4),
            }
        )
    return split
