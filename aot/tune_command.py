"""`tuned-kernels tune`: tunes a corpus on this machine's target into a results file.

With several GPUs visible, this process tunes on the first and one worker process per other GPU joins it
(`python -m tuned_kernels.aot.tune_command WORKER.json`: the request, its part file and the claims folder,
as data); each takes the next key nobody has claimed, and the parts are merged.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuned_kernels.aot import tune_run
from tuned_kernels.aot.corpus_loader import load_corpus, select_families
from tuned_kernels.aot.kinds import is_choice
from tuned_kernels.aot.progress import Progress, ProgressEvent
from tuned_kernels.aot.tune_report import TuneOptions, TuneReport, merge_reports, time_split
from tuned_kernels.aot.tuner import Tuner, tuning_order
from tuned_kernels.aot.work import EVERY_ITEM, Claims, WorkItem, visible_device_id, work_items
from tuned_kernels.hardware import compiler_fingerprint, detect

from tuned_kernels import model, resolving
from tuned_kernels.errors import ResultsFormatError
from tuned_kernels.results import merge_results, read_results, write_results
from tuned_kernels.results.locate import results_files_given
from tuned_kernels.timestamps import utc_now
from tuned_kernels.triton_edge.benchmarker import default_benchmarker
from tuned_kernels.version import TOOL_VERSION


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


def run_tune(request: TuneRequest, created_at: str) -> TuneReport:
    import torch

    started = time.time()
    target = detect()
    gpus = torch.cuda.device_count() if target.arch != "cpu" else 0
    many = gpus > 1
    report = (
        _run_workers(request, gpus, target, created_at) if many else _tune_here(request, target, created_at)
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


def _tune_here(
    request: TuneRequest,
    target: model.Target,
    created_at: str,
    claims: Claims = EVERY_ITEM,
    gpu: str = "",
    order: Sequence[int] | None = None,
) -> TuneReport:
    """Tunes `request` in this process (`claims`: which items are its; `gpu` names its device in the
    report's time split, default the first one visible; `order`: the indices of the request's items to
    tune, in order, as the process sharing the run out found them; default `tuning_order`'s)."""
    items = items_of(request)
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
        tuned = tuning_order(items) if order is None else order
        report = tune_run.tune(tuner, [items[i] for i in tuned], done, save, claims, gpu)
    report.cases = len(items)
    report.same_key = len(items) - len(tuned) if order is None else 0  # else the sharing process's count
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


def _run_workers(request: TuneRequest, gpus: int, target: model.Target, created_at: str) -> TuneReport:
    """This process tunes on GPU 0 and starts one worker process per other GPU; all of them take this
    shard's keys as they reach them (claim files), and their files and reports are merged into one."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tuned-kernels-workers-") as tmp:
        claims = Path(tmp) / "claims"
        claims.mkdir()
        parts = [str(Path(tmp) / f"part{gpu}.pb") for gpu in range(gpus)]
        resume = request.resume and Path(request.output).exists()
        if resume:  # every participant skips the keys finished earlier
            for part in parts:
                shutil.copyfile(request.output, part)
        items = items_of(request)
        with resolving.installed(None):
            order = tuning_order(items)
        shared = [i for i in order if not is_choice(items[i])]
        procs = [_start_worker(request, gpu, parts[gpu], claims, resume, shared) for gpu in range(1, gpus)]
        try:
            mine = dataclasses.replace(request, output=parts[0])
            claimed = ClaimFolder(claims)
            own = _tune_here(mine, target, created_at, claimed, f"GPU {visible_device_id(0)}", shared)
        finally:
            failed = [gpu for gpu, p in enumerate(procs, 1) if p.wait() != 0]
        merged = _merge_parts(parts, target, created_at, request.output)
        reports = [own, *(_worker_report(part) for part in parts[1:])]
    later = [i for i in order if is_choice(items[i])]
    if later:  # implementation choices time the kernels tuned before them with every GPU's winners
        again = dataclasses.replace(request, resume=True)  # from the merged file
        reports.append(_tune_here(again, target, created_at, gpu=f"GPU {visible_device_id(0)}", order=later))
    report = merge_reports(reports, time.monotonic() - start)
    report.failed += [f"worker on GPU {gpu} failed" for gpu in failed]
    report.cases, report.same_key = max(report.cases, len(merged.entries)), len(items) - len(order)
    return report


def _start_worker(
    request: TuneRequest, gpu: int, part: str, claims: Path, resume: bool, order: Sequence[int]
) -> subprocess.Popen[bytes]:
    spec = claims.parent / f"worker{gpu}.json"
    work = {
        "request": dataclasses.replace(request, output=part, resume=resume).to_json(),
        "claims": str(claims),
        "gpu": f"GPU {visible_device_id(gpu)}",
        "order": list(order),
    }
    spec.write_text(json.dumps(work))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": visible_device_id(gpu)}
    # the workers' progress goes to stderr: stdout carries this command's own (perhaps JSON) summary
    argv = [sys.executable, "-m", "tuned_kernels.aot.tune_command", str(spec)]
    return subprocess.Popen(argv, env=env, stdout=sys.stderr)


def run_worker(spec: Path) -> int:
    """A worker started by `_run_workers`: tunes the keys it claims into its part, and writes its report
    beside the part for the merged one."""
    from tuned_kernels.hardware.probe import interpret_without_gpu

    interpret_without_gpu()
    work = json.loads(spec.read_text())
    request = TuneRequest.from_json(work["request"])
    claims = ClaimFolder(Path(work["claims"]))
    report = _tune_here(request, detect(), utc_now(), claims, work["gpu"], work["order"])
    _report_path(request.output).write_text(json.dumps(dataclasses.asdict(report)))
    return 0


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
