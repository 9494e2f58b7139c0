"""`tuned-kernels tune`: tunes a corpus on this machine's target into a results file.

With several GPUs visible, this process tunes on the first and one worker process per other GPU joins it
(`python -m tuned_kernels.aot.tune_command WORKER.json`: the request, its part file and the claims folder,
as data); each takes the next key nobody has claimed, and the parts are merged. The workers start first
(`workers.py`: before this module is imported, where the GPUs can be counted without torch): they import,
load the corpus and warm up while this process finds the tuning order, which reaches them on their
standard input.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tuned_kernels.aot import tune_run
from tuned_kernels.aot.corpus_loader import load_corpus, select_families
from tuned_kernels.aot.kinds import is_choice
from tuned_kernels.aot.progress import Progress, ProgressEvent
from tuned_kernels.aot.tune_report import TuneReport, merge_reports, shared_jobs, time_split
from tuned_kernels.aot.tune_request import TuneRequest
from tuned_kernels.aot.tuner import Tuner, slot_on_meta, tuning_order
from tuned_kernels.aot.work import EVERY_ITEM, Claims, WorkItem, visible_device_id, work_items
from tuned_kernels.aot.workers import Workers
from tuned_kernels.hardware import compiler_fingerprint, detect

from tuned_kernels import model, resolving
from tuned_kernels.errors import ResultsFormatError, TunedKernelsError
from tuned_kernels.results import merge_results, read_results, write_results
from tuned_kernels.results.locate import results_files_given
from tuned_kernels.timestamps import utc_now
from tuned_kernels.triton_edge.benchmarker import default_benchmarker
from tuned_kernels.version import TOOL_VERSION


def tuned_nothing(report: TuneReport, request: TuneRequest) -> list[str]:
    """One line for each family named with --kernels that tuned no key here because its op launches another
    kernel on this machine (one not asked for with it), naming that kernel's family."""
    from tuned_kernels.triton_edge.launch import kernel_name

    families: dict[str, str] = {}
    for family in load_corpus(request.corpus):
        families.setdefault(kernel_name(family.kernel), family.name)
    lines = []
    for name in request.kernels:
        launched = report.launched_instead.get(name)
        if not launched or report.per_family.get(name, 0) or report.resumed:
            continue
        others = [families.get(k, k) for k in launched]
        if set(others) <= set(request.kernels):  # asked for with the family its op launches here
            continue
        said = ", ".join(f"{k} (family {families[k]})" if k in families else k for k in launched)
        lines.append(
            f"--kernels {name} tuned nothing: on this machine its op launches {said} instead; "
            f"tune --kernels {' --kernels '.join(others)}"
        )
    return lines


def header_now(target: model.Target, producer: model.Producer, created_at: str) -> model.Header:
    return model.Header(target, compiler_fingerprint(target), producer, TOOL_VERSION, created_at)


def run_tune(request: TuneRequest, created_at: str, early: Workers | None = None) -> TuneReport:
    """`early`: the workers `Workers.early` started before this module was imported, used where torch
    counts as many GPUs (else they end, quietly, and the run goes on as if none had started)."""
    import torch

    started = time.time()
    target = detect()
    gpus = torch.cuda.device_count() if target.arch != "cpu" else 0
    if early is not None and early.gpus != gpus:
        early.close()
        early = None
    many = gpus > 1
    request = dataclasses.replace(request, options=shared_jobs(request.options, max(1, gpus)))
    report = (
        _run_workers(request, gpus, target, created_at, early)
        if many
        else _tune_here(request, target, created_at)
    )
    ended = time.time()
    report.seconds = ended - started  # the whole run, as its time split covers it
    report.time_split = time_split(report.gpus, started, ended)
    return report


class ClaimFolder:
    """Work items are shared out as they are reached: the first process to create item i's claim file
    tunes it (so a GPU that finishes early takes more keys, instead of waiting on a fixed slice)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def take(self, index: int) -> bool:
        try:
            os.close(os.open(self.folder / str(index), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        return True


OrderOf = Callable[[Sequence[WorkItem]], Sequence[int]]  # the indices of a run's items to tune, in order


def _tune_here(
    request: TuneRequest,
    target: model.Target,
    created_at: str,
    claims: Claims = EVERY_ITEM,
    gpu: str = "",
    order_of: OrderOf = tuning_order,
    items: Sequence[WorkItem] | None = None,
) -> TuneReport:
    """Tunes `request` in this process (`claims`: which items are its; `gpu` names its device in the
    report's time split, default the first one visible; `order_of`: the indices of the request's items to
    tune, in order, asked once the tuner is ready; those the process sharing the run out found, or
    `tuning_order`'s; `items`: the request's items, when this process has them already)."""
    items = items_of(request) if items is None else items
    header = header_now(target, model.Producer.TUNE, created_at)
    done: dict[model.EntrySlot, model.Entry] = {}
    blobs: dict[str, bytes] = {}
    if request.resume and Path(request.output).exists():
        earlier = read_results(request.output)
        done = {e.slot: e for e in earlier.entries}
        blobs.update(earlier.blobs)

    def save(entries: dict[model.EntrySlot, model.Entry]) -> None:
        ordered = tuple(sorted(entries.values(), key=model.entry_sort_key))
        write_results(request.output, model.Results(header, ordered, model.referenced_blobs(ordered, blobs)))

    progress = Progress(sys.stderr)
    tuner = tuner_for(request, target, progress, blobs)
    with resolving.installed(None):  # the tuner measures configs itself: bundles must not answer for it
        tuned = order_of(items)
        report = tune_run.tune(tuner, [items[i] for i in tuned], done, save, claims, gpu)
    report.cases = len(items)
    shared_out = order_of is not tuning_order
    report.same_key = 0 if shared_out else len(items) - len(tuned)  # else the sharing process's count
    progress.close()
    if not Path(request.output).exists():
        save(done)  # an empty shard still writes a valid file
    return report


def items_of(request: TuneRequest) -> list[WorkItem]:
    """The request's work items, in the corpus's order (alike in every process)."""
    families = select_families(load_corpus(request.corpus), request.kernels)
    return work_items(families, request.shapes, request.options.shard)


def tuner_for(
    request: TuneRequest,
    target: model.Target,
    on_progress: Callable[[ProgressEvent], None],
    blobs: dict[str, bytes],
) -> Tuner:
    """The tuner of `request` on `target`: its options, the seeds of its seed files, the device's benchmarker."""
    seeds = [e for path in results_files_given(request.seed_files) for e in read_results(path).entries]
    device = "cuda" if target.arch != "cpu" else "cpu"
    benchmarker = default_benchmarker(target.arch != "cpu")
    return Tuner(target, device, benchmarker, request.options, seeds, on_progress, blobs)


def _run_workers(
    request: TuneRequest, gpus: int, target: model.Target, created_at: str, started: Workers | None = None
) -> TuneReport:
    """This process tunes on GPU 0 and one worker process per other GPU joins it (`started` already, or
    now); all of them take this shard's keys as they reach them (claim files), and their files and reports
    are merged into one. The workers are started before the order is found, and wait for it on their
    standard input."""
    start = time.monotonic()
    workers = started or Workers(request, gpus)
    try:
        try:
            items = items_of(request)
            with resolving.installed(None):
                order = tuning_order(items)
            shared = [i for i in order if not is_choice(items[i])]
            workers.send_order(shared)
            mine = dataclasses.replace(request, output=workers.parts[0])
            claimed = ClaimFolder(workers.claims)
            gpu0 = f"GPU {visible_device_id(0)}"
            own = _tune_here(mine, target, created_at, claimed, gpu0, lambda _: shared, items)
        except BaseException:  # this process failed (its tuner, its GPU): the workers stop too
            workers.stop()
            raise
        finally:
            failed = workers.wait()
        merged = _merge_parts(workers.parts, target, created_at, request.output)
        reports = [own, *(_worker_report(part) for part in workers.parts[1:])]
    finally:
        workers.close()
    later = [i for i in order if is_choice(items[i])]
    if later:  # implementation choices time the kernels tuned before them with every GPU's winners
        again = dataclasses.replace(request, resume=True)  # from the merged file
        reports.append(_tune_here(again, target, created_at, gpu=gpu0, order_of=lambda _: later, items=items))
    report = merge_reports(reports, time.monotonic() - start)
    report.failed += [f"worker on GPU {gpu} failed" for gpu in failed]
    report.cases, report.same_key = max(report.cases, len(merged.entries)), len(items) - len(order)
    return report


def run_worker(spec: Path) -> int:
    """A worker started by `_run_workers`: loads the corpus and warms up, then waits for the tuning order
    (none: the starting process gave up, and so does this one, quietly: that process says why), tunes the
    keys it claims into its part, and writes its report beside the part for the merged one."""
    from tuned_kernels.hardware.probe import interpret_without_gpu

    interpret_without_gpu()
    work = json.loads(spec.read_text())
    request = TuneRequest.from_json(work["request"])
    claims = ClaimFolder(Path(work["claims"]))
    given = _OrderGiven(Path(work["order"]))
    try:
        report = _tune_here(request, detect(), utc_now(), claims, work["gpu"], given)
    except Exception:
        if not given.sent():  # the starting process failed before sending it, and says why
            return 1
        raise
    _report_path(request.output).write_text(json.dumps(dataclasses.asdict(report)))
    return 0


class _OrderGiven:
    """The order a worker's starting process sends: asked for once the first key's probe has done its
    one-time imports (Dynamo's, on `meta`) here, while that process still finds the order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.go: bool | None = None  # what standard input said, once read

    def __call__(self, items: Sequence[WorkItem]) -> Sequence[int]:
        if items:
            with contextlib.suppress(Exception):
                slot_on_meta(items[0])
        if not self.sent():
            raise TunedKernelsError("the tune that started this worker ended before sharing its keys out")
        return [int(i) for i in json.loads(self.path.read_text())]

    def sent(self) -> bool:
        """Whether the starting process sent the order: waited for on standard input (False: it ended)."""
        if self.go is None:
            self.go = sys.stdin.readline().strip() == "go"
        return self.go


def _merge_parts(parts: Sequence[str], target: model.Target, created_at: str, output: str) -> model.Results:
    inputs = []
    for part in parts:
        try:
            inputs.append((part, read_results(part)))
        except (ResultsFormatError, OSError):
            continue
    merged = merge_results(inputs, created_at=created_at, tool_version=TOOL_VERSION)
    header = header_now(target, model.Producer.TUNE, created_at)
    results = model.Results(header, merged.entries, merged.blobs)
    write_results(output, results)
    return results


def _report_path(part: str) -> Path:
    return Path(part + ".report.json")


def _worker_report(part: str) -> TuneReport:
    """What a worker wrote beside its part (nothing: it failed before the end, its entries still count)."""
    try:
        return TuneReport.from_json(json.loads(_report_path(part).read_text()))
    except (OSError, ValueError, TypeError):
        return TuneReport()


if __name__ == "__main__":
    sys.exit(run_worker(Path(sys.argv[1])))
