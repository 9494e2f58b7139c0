"""One run of the tuner over its work items: which items are this process's, the keys probed (and
compiling) ahead, what each item's kind of kernel needs, and the progress and report. The one-process
`tune` and each Dask task run it alike."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from tuned_kernels.aot.kinds import SearchingKernel, kind_of
from tuned_kernels.aot.progress import ProgressEvent
from tuned_kernels.aot.tune_report import GpuTime, TuneReport
from tuned_kernels.aot.tuner import Compiling, Tuner
from tuned_kernels.aot.work import (
    EVERY_ITEM,
    Claims,
    NoValidConfig,
    Probed,
    WorkItem,
    artifacts_apply,
    slot_of,
    this_gpu,
)

from tuned_kernels import model
from tuned_kernels.triton_edge.benchmarker import fallbacks
from tuned_kernels.triton_edge.launch import LaunchesAnother


def tune(
    tuner: Tuner,
    items: Sequence[WorkItem],
    done: dict[model.EntrySlot, model.Entry],
    save: Callable[[dict[model.EntrySlot, model.Entry]], None],
    claims: Claims = EVERY_ITEM,
    gpu: str = "",
) -> TuneReport:
    """Tunes `items` in order, skipping slots in `done` and items another process claimed; each new entry
    goes into `done` and `save`. While one key is measured, the next key's space compiles on the compile
    threads. `gpu` names the device in the report's time split (default: the first one visible)."""
    return TuneRun(tuner, items, done, claims, gpu).run(save)


class TuneRun:
    """One `Tuner.run`: this process's items, the keys probed (and compiling) ahead, progress. Of the tuner
    it uses `key_of`, `slot_on_meta`, `start_compiling`, `tune_case`, `times`, `options`, `on_progress`."""

    def __init__(self, tuner: Tuner, items: Sequence[WorkItem], done: dict[model.EntrySlot, model.Entry],
                 claims: Claims, gpu: str = "") -> None:  # fmt: skip
        self.tuner, self.items, self.done, self.claims = tuner, items, done, claims
        self.gpu = gpu or this_gpu(tuner.target)
        self.began: float | None = None  # time.time() when its first key started
        self.keys = 0
        self.measuring: model.EntrySlot | None = None  # the slot of the key being measured
        self.report, self.start = TuneReport(cases=len(items)), time.monotonic()
        self.ahead: dict[int, tuple[model.EntrySlot, Probed, Compiling] | None] = {}
        self.other_kernel: set[int] = set()  # items whose op launches another family's kernel here
        self.searched: set[int] = set()  # items whose kernel searches its configs itself when the op runs
        self.claimed = _Claimed(claims, len(items))
        jobs = max(1, tuner.options.jobs)
        self.compilers = ThreadPoolExecutor(jobs, thread_name_prefix="tuned-kernels-compile")

    def run(self, save: Callable[[dict[model.EntrySlot, model.Entry]], None]) -> TuneReport:
        try:
            for n, item in enumerate(self.items, 1):
                budget = self.tuner.options.time_budget_s
                if budget is not None and time.monotonic() - self.start > budget:
                    self.report.stopped_early = True
                    break
                if not self.claimed.mine(n - 1):
                    continue
                if self.began is None:
                    self.began = time.time()
                if self.tune_item(n, item):
                    self.keys += 1
                    save(self.done)
        finally:
            self.compilers.shutdown(wait=False, cancel_futures=True)
        return self.finish()

    def finish(self) -> TuneReport:
        report, options, times = self.report, self.tuner.options, self.tuner.times
        report.seconds = time.monotonic() - self.start
        report.compile_seconds, report.benchmark_seconds = times.compile, times.benchmark
        report.artifact_note = report.artifacts_said(options.artifacts, artifacts_apply(self.tuner.target))
        now, spent = time.time(), (times.probe, times.compile, times.measure, times.queue)
        report.gpus = [GpuTime(self.gpu, self.began or now, now, self.keys, *spent)]
        return report

    def prepare(self, i: int) -> None:
        """Probes item i's key and starts compiling its space; `ahead[i]` is None for an item tuned earlier."""
        if i >= len(self.items) or i in self.ahead:
            return
        item = self.items[i]
        self.ahead[i] = None
        if kind_of(item.family.kernel).searches_itself:  # its key is known once the op runs
            self.searched.add(i)
            return
        t0 = time.monotonic()
        try:  # no inputs made for keys finished earlier or another family's: probed on `meta` first
            if self.tuner.slot_on_meta(item) in self.done:
                return
            probed = self.tuner.key_of(item)
            slot = slot_of(item, probed)
            if slot not in self.done and slot != self.measuring:  # one key, two cases: tuned once
                compiling = self.tuner.start_compiling(self.compilers, item.family.kernel, probed[1])
                self.ahead[i] = (slot, probed, compiling)
        except LaunchesAnother as exc:
            self.other_kernel.add(i)
            self.report.note_launched(item.family.name, exc.launched)
        finally:
            self.tuner.times.probe += time.monotonic() - t0

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
        self.measuring = slot
        self.prepare(self.claimed.next_mine(n))  # the next key's space compiles while this one is measured
        times = self.tuner.times
        t0, waited, fell_back = time.monotonic(), times.compile, fallbacks(self.tuner.benchmarker)
        try:
            with kind_of(item.family.kernel).measuring(self.done.values()):
                on_config = functools.partial(self.progress, n, item)
                entry: model.Entry | NoValidConfig = self.tuner.tune_case(item, probed, on_config, compiling)
        except NoValidConfig as exc:
            entry = exc
        finally:  # the compiles it waited for inside are the GPU idle, not measuring
            times.measure += time.monotonic() - t0 - (times.compile - waited)
            self.report.timed_by_do_bench += fallbacks(self.tuner.benchmarker) - fell_back
        if isinstance(entry, NoValidConfig):  # counted above, before progress tells a Dask client of it
            self.report.failed.append(str(entry))
            self.progress(n, item, summary=f"FAILED: {entry}")
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
        """Tunes item n, whose kernel searches its configs itself, into `done` (False: nothing new to keep)."""
        self.prepare(self.claimed.next_mine(n))
        t0 = time.monotonic()
        try:
            entries = SearchingKernel().tune_by_its_search(self.tuner, item, self.done)
        except NoValidConfig as exc:
            self.report.failed.append(str(exc))
            self.progress(n, item, summary=f"FAILED: {exc}")
            return False
        finally:
            self.tuner.times.measure += time.monotonic() - t0
        if not entries:
            self.report.resumed += 1
            self.progress(n, item, summary="nothing searched (done earlier, or its config set), skipped")
            return False
        for entry in entries:
            self.done[entry.slot] = entry
        tuned, compiled = self.report.add_searched(item.family.name, entries)
        configs = sum(e.configs_benchmarked for e in tuned)
        summary = (
            f"found by its own search: {', '.join(e.best.describe() for e in tuned)}, {configs} configs "
            f"timed, {len(compiled)} compiled kernels in {time.monotonic() - t0:.1f}s"
        )
        self.progress(n, item, summary=summary)
        return True

    def progress(self, n: int, item: WorkItem, configs_done: int = 0, configs_total: int = 0,
                 best: str | None = None, best_ms: float | None = None,
                 summary: str | None = None) -> None:  # fmt: skip
        where = (n, len(self.items), item.family.name, item.case.id)
        measured = (configs_done, configs_total, best, best_ms)
        self.tuner.on_progress(ProgressEvent(*where, *measured, time.monotonic() - self.start, summary))


class _Claimed:
    """Which of a run's items are this process's, each asked of the claims once."""

    def __init__(self, claims: Claims, items: int) -> None:
        self.claims, self.items = claims, items
        self.answers: dict[int, bool] = {}

    def mine(self, i: int) -> bool:
        if i not in self.answers:
            self.answers[i] = self.claims.take(i)
        return self.answers[i]

    def next_mine(self, i: int) -> int:
        """The first of items i, i+1, ... that is this process's (the item count when none is)."""
        while i < self.items and not self.mine(i):
            i += 1
        return i
