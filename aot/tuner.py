"""The offline tuner: for every case of every family, measure configs, check them, keep the winner.

Each config's output is checked against the family's reference on fresh random inputs before it may win;
one that fails to compile, run or match is recorded as rejected with its reason. Results are written after
every case (atomically), so an interrupted run leaves a valid file and `resume` skips finished keys.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from tuned_kernels.aot.answers import SearchedAnswers
from tuned_kernels.aot.corpus import Case, Corpus, KernelFamily
from tuned_kernels.aot.heuristics import seeds_for
from tuned_kernels.aot.kinds import kind_of
from tuned_kernels.aot.progress import ProgressEvent

from tuned_kernels import model, resolving, search
from tuned_kernels.decision import COMPILED_PREFIX, compiled_kernel_entry
from tuned_kernels.helion_edge import hooks as helion_hooks
from tuned_kernels.triton_edge.benchmarker import Benchmarker
from tuned_kernels.triton_edge.cache_manager import recording_compiles
from tuned_kernels.triton_edge.compile import artifact_of, is_compiled_kernel, warmup
from tuned_kernels.triton_edge.keys import config_from_triton, kernel_identity
from tuned_kernels.triton_edge.launch import LaunchesAnother, config_space, forced_config, probe_key
from tuned_kernels.triton_edge.measuring import submit_compiles

OnConfig = Callable[[int, int, "str | None", "float | None"], None]
Probed = tuple[model.TuningKey, dict[str, Any], dict[str, Any]]  # key, named launch arguments, inputs
KEEP_TIMINGS = 5  # the winner and the next best few
CHECK_SEED_OFFSET = 1_000_003  # check inputs are drawn apart from benchmark inputs


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
    merged.artifact_note = (
        f"{merged.artifacts} compiled kernels kept, {merged.artifact_bytes} bytes"
        if kept
        else (notes or [""])[0]
    )
    return merged


class Claims(Protocol):
    """Which work items this process tunes, when several share one run's items (one per GPU)."""

    def take(self, index: int) -> bool:
        """True: item `index` is this process's (asked once, when the run reaches it)."""
        ...


class _EveryItem:
    def take(self, index: int) -> bool:
        return True


EVERY_ITEM: Claims = _EveryItem()


@dataclass
class TuneTimes:
    """Seconds a run spent waiting for compiles (those not hidden behind measuring), and measuring."""

    compile: float = 0.0
    benchmark: float = 0.0


@dataclass(frozen=True)
class WorkItem:
    family: KernelFamily
    case: Case


def work_items(corpus: Corpus, shape_set: str, shard: tuple[int, int]) -> list[WorkItem]:
    """Every (family, case) in a fixed order; shard i of n takes every n-th, starting at i."""
    items = [WorkItem(f, c) for f in corpus for c in f.cases(shape_set)]
    index, count = shard
    return [item for i, item in enumerate(items) if i % count == index]


class Tuner:
    def __init__(
        self,
        target: model.Target,
        device: Any,
        benchmarker: Benchmarker,
        options: TuneOptions,
        seeds_from: Sequence[model.Entry] = (),
        on_progress: Callable[[ProgressEvent], None] = lambda _: None,
        blobs: dict[str, bytes] | None = None,
    ) -> None:
        self.target = target
        self.device = device
        self.benchmarker = benchmarker
        self.options = options
        self.seeds_from = seeds_from
        self.on_progress = on_progress
        self.blobs = blobs if blobs is not None else {}  # artifact file contents, shared with the writer
        self.times = TuneTimes()

    # -- one case -----------------------------------------------------------------------------------

    def key_of(self, item: WorkItem) -> Probed:
        inputs = item.family.make_inputs(item.case, self.device, self._generator(0))
        key, named = probe_key(item.family.kernel, lambda: item.family.run(inputs))
        return key, named, inputs

    def slot_on_meta(self, item: WorkItem) -> model.EntrySlot | None:
        """The item's slot probed with inputs on torch's `meta` device (shapes, no data); None when the
        family cannot make its inputs there; raises `LaunchesAnother` as a real probe would."""
        try:
            inputs = item.family.make_inputs(item.case, "meta", self._generator(0))
            key, named = probe_key(item.family.kernel, lambda: item.family.run(inputs))
        except LaunchesAnother:
            raise
        except Exception:  # a user corpus need not support meta inputs: the real probe decides
            return None
        return slot_of(item, (key, named, inputs))

    def tune_case(self, item: WorkItem, probed: Probed, on_config: OnConfig = lambda *_: None) -> model.Entry:
        """Measures and checks `item`'s configs; `on_config` hears (configs done, configs in the space, best
        so far described, its time) after each one."""
        family, kernel = item.family, item.family.kernel
        key, named, bench_inputs = probed
        check_inputs = family.make_inputs(item.case, self.device, self._generator(CHECK_SEED_OFFSET))
        reference = family.reference(check_inputs)
        space = {config_from_triton(c): c for c in config_space(kernel, named)}
        benchmarker = kind_of(kernel).benchmarker(self.benchmarker)
        rejected: list[model.Rejection] = []
        progress: dict[str, Any] = {"done": 0, "best": None, "best_ms": None}
        on_config(0, len(space), None, None)

        def measure(config: model.Config) -> float | None:
            time_ms = check_and_time(config)
            progress["done"] += 1
            if time_ms is not None and (progress["best_ms"] is None or time_ms < progress["best_ms"]):
                progress.update(best=config, best_ms=time_ms)
            best = progress["best"].describe() if progress["best"] is not None else None
            on_config(progress["done"], len(space), best, progress["best_ms"])
            return time_ms

        def check_and_time(config: model.Config) -> float | None:
            reason = None
            with forced_config(kernel, space[config]):
                try:
                    out = family.run(check_inputs)
                    reason = mismatch(out, reference, family.tolerance)
                    if reason is None:
                        t0 = time.monotonic()
                        try:
                            return benchmarker(lambda: family.run(bench_inputs))
                        finally:
                            self.times.benchmark += time.monotonic() - t0
                except Exception as exc:  # a config that fails to compile or run must not stop the tune
                    reason = f"failed: {type(exc).__name__}: {first_line(exc)}"
            rejected.append(model.Rejection(config, reason))
            return None

        measured, found_by = self._search(family, item.case, key, list(space), measure)
        ranked = sorted((t, repr(c), c) for c, t in measured.items() if t is not None)
        if not ranked:
            raise NoValidConfig(
                f"{family.name} {item.case.id}: every config was rejected "
                f"({'; '.join(r.reason for r in rejected[:3])})"
            )
        keep = [c for _, _, c in ranked] if self.options.artifacts == "all" else [ranked[0][2]]
        return model.Entry(
            kernel=kernel_identity(kernel),
            key=key,
            best=ranked[0][2],
            timings=tuple(model.Timing(c, t) for t, _, c in ranked[:KEEP_TIMINGS]),
            rejected=tuple(rejected),
            found_by=found_by,
            configs_benchmarked=len(measured),
            artifacts=self._artifacts(kernel, named, keep),
        )

    def tune_by_its_search(
        self, item: WorkItem, done: dict[model.EntrySlot, model.Entry]
    ) -> list[model.Entry]:
        """Runs the op of a kernel that searches its configs itself (a Helion kernel: its own search, with
        its own settings), keeps what the search found, with the kernels Triton compiled outside the search,
        and checks the winner's output against the reference on fresh inputs. [] when every key the op
        reached is in `done` already, or had its config set already (nothing was searched)."""
        family = item.family
        helion_hooks.install_when_imported()
        answers, compiled = SearchedAnswers(done.values()), []

        def keep(artifact: model.Artifact, blobs: dict[str, bytes], name: str) -> None:
            self.blobs.update(blobs)
            compiled.append(compiled_kernel_entry(name, artifact))

        keeps = self.options.artifacts != "none" and artifacts_apply(self.target)
        inputs = family.make_inputs(item.case, self.device, self._generator(0))
        check_inputs = family.make_inputs(item.case, self.device, self._generator(CHECK_SEED_OFFSET))
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
            self.times.benchmark += time.monotonic() - t0
        found = list(answers.kept.values())
        if not found:
            return []
        reason = mismatch(out, family.reference(check_inputs), family.tolerance)
        if reason is not None:
            raise NoValidConfig(f"{family.name} {item.case.id}: the config its search found: {reason}")
        return [*found, *compiled]

    def _search(
        self, family: KernelFamily, case: Case, key: model.TuningKey, space: list[model.Config], measure: Any
    ) -> tuple[dict[model.Config, float | None], model.FoundBy]:
        if self.options.strategy == "seeded":
            name = kernel_identity(family.kernel).name
            earlier = [e for e in self.seeds_from if e.kernel.name == name]
            seeds = seeds_for(self.target, family.name, case, key, space, earlier)
            return search.seeded(space, seeds, measure), model.FoundBy.SEEDED
        return search.exhaustive(space, measure), model.FoundBy.EXHAUSTIVE

    def _artifacts(
        self, kernel: Any, named: dict[str, Any], configs: Sequence[model.Config]
    ) -> tuple[model.Artifact, ...]:
        """The compiled kernels of `configs` (already compiled while measuring: Triton's caches answer)."""
        if (
            self.options.artifacts == "none"
            or not artifacts_apply(self.target)
            or not is_compiled_kernel(kernel)
        ):
            return ()
        found = []
        for config in configs:
            artifact, blobs = artifact_of(warmup(kernel, named, config), config)
            self.blobs.update(blobs)
            found.append(artifact)
        return tuple(found)

    def start_compiling(
        self, pool: ThreadPoolExecutor, kernel: Any, named: dict[str, Any]
    ) -> list[Future[None]]:
        """Compiles every config of the space on `pool` in the background (the measuring engine a miss uses
        too), so a key's space compiles while the key before it is measured. Failures are left for
        `measure` to record."""
        if self.options.jobs <= 1 or self.target.arch == "cpu":
            return []
        # pruned here, on the calling thread: pruning uses the autotuner's own state
        space = [config_from_triton(c) for c in config_space(kernel, named)]
        return submit_compiles(pool, kernel, named, space)

    def _generator(self, offset: int) -> Any:
        import torch

        return torch.Generator().manual_seed(self.options.seed + offset)

    def run(
        self,
        items: Sequence[WorkItem],
        done: dict[model.EntrySlot, model.Entry],
        save: Callable[[dict[model.EntrySlot, model.Entry]], None],
        claims: Claims = EVERY_ITEM,
    ) -> TuneReport:
        """Tunes `items` in order, skipping slots in `done` and items another process claimed; each new
        entry goes into `done` and `save`. While one key is measured, the next key's space compiles on the
        compile threads."""
        return TuneRun(self, items, done, claims).run(save)


class TuneRun:
    """One `Tuner.run`: which items are this process's, the keys probed (and compiling) ahead, progress.
    What it needs of the tuner is public: `key_of`, `slot_on_meta`, `start_compiling`, `tune_case`,
    `times`, `options` and `on_progress`."""

    def __init__(
        self,
        tuner: Tuner,
        items: Sequence[WorkItem],
        done: dict[model.EntrySlot, model.Entry],
        claims: Claims,
    ) -> None:
        self.tuner, self.items, self.done, self.claims = tuner, items, done, claims
        self.report = TuneReport(cases=len(items))
        self.start = time.monotonic()
        self.ahead: dict[int, tuple[model.EntrySlot, Probed, list[Future[None]]] | None] = {}
        self.other_kernel: set[int] = set()  # items whose op launches another family's kernel here
        self.searched: set[int] = set()  # items whose kernel searches its configs itself when the op runs
        self.claimed: dict[int, bool] = {}
        jobs = max(1, tuner.options.jobs)
        self.compilers = ThreadPoolExecutor(jobs, thread_name_prefix="tuned-kernels-compile")

    def run(self, save: Callable[[dict[model.EntrySlot, model.Entry]], None]) -> TuneReport:
        try:
            for n, item in enumerate(self.items, 1):
                budget = self.tuner.options.time_budget_s
                if budget is not None and time.monotonic() - self.start > budget:
                    self.report.stopped_early = True
                    break
                if self.mine(n - 1) and self.tune_item(n, item):
                    save(self.done)
        finally:
            self.compilers.shutdown(wait=False, cancel_futures=True)
        return self.finish()

    def finish(self) -> TuneReport:
        report, options, times = self.report, self.tuner.options, self.tuner.times
        report.seconds = time.monotonic() - self.start
        report.compile_seconds, report.benchmark_seconds = times.compile, times.benchmark
        if options.artifacts == "none":
            report.artifact_note = "not kept (--artifacts none)"
        elif not artifacts_apply(self.tuner.target):
            report.artifact_note = "do not apply to the cpu target (Triton's interpreter compiles nothing)"
        else:
            report.artifact_note = f"{report.artifacts} compiled kernels kept, {report.artifact_bytes} bytes"
        return report

    def mine(self, i: int) -> bool:
        if i not in self.claimed:
            self.claimed[i] = self.claims.take(i)
        return self.claimed[i]

    def next_mine(self, i: int) -> int:
        while i < len(self.items) and not self.mine(i):
            i += 1
        return i

    def prepare(self, i: int) -> None:
        """Probes item i's key and starts compiling its space; `ahead[i]` is None for an item tuned earlier."""
        if i >= len(self.items) or i in self.ahead:
            return
        item = self.items[i]
        self.ahead[i] = None
        if kind_of(item.family.kernel).searches_itself:  # its key is known once the op runs
            self.searched.add(i)
            return
        try:  # no inputs made for keys finished earlier or another family's: probed on `meta` first
            if self.tuner.slot_on_meta(item) in self.done:
                return
            probed = self.tuner.key_of(item)
        except LaunchesAnother:
            self.other_kernel.add(i)
            return
        slot = slot_of(item, probed)
        if slot not in self.done:
            compiling = self.tuner.start_compiling(self.compilers, item.family.kernel, probed[1])
            self.ahead[i] = (slot, probed, compiling)

    def tune_item(self, n: int, item: WorkItem) -> bool:
        """Tunes item n (1-based) into `done`; False when there was nothing new to keep."""
        self.prepare(n - 1)
        prepared = self.ahead.pop(n - 1)
        if n - 1 in self.searched:
            return self.tune_searched(n, item)
        if prepared is None and n - 1 in self.other_kernel:
            self.report.other_kernel += 1
            self.progress(n, item, summary="its op launches another family's kernel here, skipped")
            return False
        if prepared is None:
            self.report.resumed += 1
            self.progress(n, item, summary="done earlier, skipped")
            return False
        slot, probed, compiling = prepared
        self.prepare(self.next_mine(n))  # the next key's space compiles while this one is measured
        t0 = time.monotonic()
        for job in compiling:
            job.result()
        self.tuner.times.compile += time.monotonic() - t0
        t0 = time.monotonic()
        try:
            with kind_of(item.family.kernel).measuring(self.done.values()):
                entry = self.tuner.tune_case(item, probed, functools.partial(self.progress, n, item))
        except NoValidConfig as exc:
            self.report.failed.append(str(exc))
            self.progress(n, item, summary=f"FAILED: {exc}")
            return False
        self.done[slot] = entry
        self.report.add(item.family.name, entry)
        summary = (
            f"best {entry.best.describe()} {entry.best_time_ms:.4g} ms, "
            f"{entry.configs_benchmarked} configs, {len(entry.rejected)} rejected "
            f"in {time.monotonic() - t0:.1f}s"
        )
        self.progress(n, item, summary=summary)
        return True

    def tune_searched(self, n: int, item: WorkItem) -> bool:
        """Tunes item n, whose kernel searches its configs itself, into `done`; False when there was nothing
        new to keep."""
        self.prepare(self.next_mine(n))
        t0 = time.monotonic()
        try:
            entries = self.tuner.tune_by_its_search(item, self.done)
        except NoValidConfig as exc:
            self.report.failed.append(str(exc))
            self.progress(n, item, summary=f"FAILED: {exc}")
            return False
        if not entries:
            self.report.resumed += 1
            self.progress(n, item, summary="nothing searched (done earlier, or its config set), skipped")
            return False
        compiled = [
            e for e in entries if e.kernel.name.startswith(COMPILED_PREFIX)
        ]  # kept beside the configs
        tuned = [e for e in entries if e not in compiled]
        for entry in entries:
            self.done[entry.slot] = entry
        for entry in tuned:
            self.report.add(item.family.name, entry)
        for entry in compiled:
            self.report.artifacts += len(entry.artifacts)
            self.report.artifact_bytes += sum(a.size_bytes for a in entry.artifacts)
        configs = sum(e.configs_benchmarked for e in tuned)
        summary = (
            f"found by its own search: {', '.join(e.best.describe() for e in tuned)}, {configs} configs "
            f"timed, {len(compiled)} compiled kernels in {time.monotonic() - t0:.1f}s"
        )
        self.progress(n, item, summary=summary)
        return True

    def progress(
        self,
        n: int,
        item: WorkItem,
        configs_done: int = 0,
        configs_total: int = 0,
        best: str | None = None,
        best_ms: float | None = None,
        summary: str | None = None,
    ) -> None:
        where = (n, len(self.items), item.family.name, item.case.id)
        measured = (configs_done, configs_total, best, best_ms)
        self.tuner.on_progress(ProgressEvent(*where, *measured, time.monotonic() - self.start, summary))


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
