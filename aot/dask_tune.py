"""`tuned-kernels tune --dask ADDRESS`: a corpus tuned on a Dask cluster, each worker (one GPU) running one
stream that takes the run's keys one at a time as it reaches them, the next one's configs compiling while
one is measured (what runs on the workers: dask_worker.py).

- Workers report their target and compiler first; every key is tuned once per kind of worker (a mixed
  cluster yields one results file per GPU type and compiler), on a worker of that kind only.
- Each task asks for one `GPU` resource: a worker runs as many tuning tasks at once as it has GPUs
  declared (`dask worker --resources GPU=1`, one worker per GPU; `--dask local` starts such a cluster on
  this machine). A worker that dies mid-key has its stream re-run by the scheduler, and the keys it held
  (the one it measured and the next it claimed) tuned by tasks of their own once the streams ended. A
  stream whose client is gone takes no more keys.
- The client writes each kind's file (atomically) as the streams tell it keys they finished (through a
  queue on the scheduler), so `--resume` after the client itself was stopped keeps every finished key; what a
  worker sends is our results format, read back with the same checks as any file, never a pickled object
  of ours.
- `--time-budget` is a deadline each stream and task reads: no key starts after it, on any worker.
- Keys of implementation choices (which time the kernels tuned before them with their winners) run after
  every other key of their kind finished, with those winners.

Dask is optional (`pip install 'tuned-kernels[dask]'`) and imported only here. This module imports no
torch: `--dask local` starts its workers (which import theirs as they start) while the client loads the
corpus, and their GPUs are counted from the driver's list where it can tell.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuned_kernels.aot.corpus_loader import load_corpus, select_families
from tuned_kernels.aot.dask_cluster import DEFAULT_TIMEOUT_S, GPU, LOCAL, connect
from tuned_kernels.aot.dask_worker import (
    END,
    Said,
    stream_on_worker,
    tune_on_worker,
    warm_up,
    worker_kind,
    worker_spec,
)
from tuned_kernels.aot.kinds import is_choice
from tuned_kernels.aot.progress import Progress, ProgressEvent
from tuned_kernels.aot.tune_report import TuneReport, combined, merge_reports, time_split
from tuned_kernels.aot.tune_request import TuneRequest
from tuned_kernels.aot.work import WorkItem, work_items

from tuned_kernels import model
from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.naming import compiler_digest, safe_arch, safe_version
from tuned_kernels.version import TOOL_VERSION

RETRIES = 2  # a task that raises is tried this many more times (a dead worker's task is re-run anyway)
POLL_S = 0.1  # how often the client asks the streams' queues for keys they finished


@dataclass(frozen=True)
class Kind:
    """A kind of worker: the GPU architecture and compiler its results are for (the target and compiler in
    full are those of the first worker of the kind, as a tune on it would record them)."""

    target: model.Target = field(compare=False)
    compiler: model.CompilerFingerprint = field(compare=False)
    arch: str = ""
    compiler_id: str = ""

    @staticmethod
    def of(target: model.Target, compiler: model.CompilerFingerprint) -> Kind:
        return Kind(target, compiler, target.arch, compiler.compiler_id)

    @property
    def compiler_label(self) -> str:
        """`triton3.6.0-<digest>`."""
        return f"triton{safe_version(self.compiler.triton_version)}-{compiler_digest(self.compiler)}"

    @property
    def label(self) -> str:
        """`sm90-triton3.6.0-<digest>`: names its file when the output names more than one kind."""
        return f"{safe_arch(self.target.arch)}-{self.compiler_label}"


@dataclass
class KindFile:
    """One kind's results file, written as its keys finish."""

    path: Path
    header: model.Header
    entries: dict[model.EntrySlot, model.Entry] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)

    def add(self, results: model.Results) -> None:
        for entry in results.entries:
            self.entries[entry.slot] = entry
        self.blobs.update(results.blobs)

    def save(self) -> None:
        from tuned_kernels.results import write_results

        ordered = tuple(sorted(self.entries.values(), key=model.entry_sort_key))
        write_results(
            self.path, model.Results(self.header, ordered, model.referenced_blobs(ordered, self.blobs))
        )

    def answers(self) -> bytes:
        """Its entries without their compiled kernels, as our results format (what a task starts from)."""
        from tuned_kernels.results.files import encode_results

        bare = tuple(dataclasses.replace(e, artifacts=()) for e in self.entries.values())
        return encode_results(
            model.Results(self.header, tuple(sorted(bare, key=model.entry_sort_key))), "a.pb"
        )


def output_for(pattern: str, kind: Kind, first: bool) -> Path:
    """A kind's file: `pattern` with `{target}` and `{compiler}` filled in where it has them; else the
    pattern itself for the first kind the run met, and the pattern with the kind's label before its
    extensions for every other."""
    if "{target}" in pattern or "{compiler}" in pattern:
        return Path(pattern.replace("{target}", kind.target.arch).replace("{compiler}", kind.compiler_label))
    path = Path(pattern)
    if first:
        return path
    suffixes = "".join(path.suffixes)
    return path.with_name(f"{path.name.removesuffix(suffixes)}.{kind.label}{suffixes}")


def run_on_dask(
    request: TuneRequest, address: str, created_at: str, timeout_s: float = DEFAULT_TIMEOUT_S
) -> TuneReport:
    try:
        import distributed
    except ImportError:
        raise TunedKernelsError("--dask needs Dask: pip install 'tuned-kernels[dask]'") from None
    start, started = time.monotonic(), time.time()
    request = dataclasses.replace(request, corpus=_absolute(request.corpus))
    with ThreadPoolExecutor(1, thread_name_prefix="tuned-kernels-order") as preparing:
        # the corpus loaded (torch imported), its items and the indices to tune in order: found here,
        # once, while the cluster starts
        prepared = preparing.submit(_items_in_order, request)
        request_json = request.to_json()  # one request for the workers' early warm-up and the run's spec
        with connect(distributed, address, timeout_s, request_json) as client:
            split = {"cluster": time.monotonic() - start}
            items, kept = prepared.result()  # (a corpus that cannot load fails here, before any wait)
            split["corpus"] = time.monotonic() - start
            workers = _kinds_of_workers(distributed, client, per_gpu=address == LOCAL)
            split["kinds"] = time.monotonic() - start
            spec = worker_spec(request_json, _workers_by_host(client))
            with contextlib.suppress(Exception):  # best effort: a worker that fails here fails its task alike
                client.run(warm_up, spec)
            startup = split["warm"] = time.monotonic() - start  # the cluster up, every kind known and warm
            files = _files_for(request, list(workers), created_at)
            reports = _Run(distributed, client, request, spec, items, kept, files, workers).run()
    report = merge_reports(reports, time.monotonic() - start)
    report.cases, report.same_key = len(items) * len(files), (len(items) - len(kept)) * len(files)
    report.outputs = [str(f.path) for f in files.values()]
    report.startup_seconds = startup
    report.startup_split = {step: round(seconds, 3) for step, seconds in split.items()}
    report.gpus = combined(report.gpus)
    report.time_split = time_split(report.gpus, started, started + report.seconds)
    return report


def _items_in_order(request: TuneRequest) -> tuple[list[WorkItem], list[int]]:
    """The run's work items (each worker makes them alike) and the indices of those to tune, in order."""
    from tuned_kernels.hardware.probe import interpret_without_gpu

    interpret_without_gpu()  # (it imports torch) before the corpus defines its kernels
    from tuned_kernels.aot.tuner import tuning_order

    families = select_families(load_corpus(request.corpus), request.kernels)
    items = work_items(families, request.shapes, request.options.shard)
    return items, list(tuning_order(items))


def _absolute(corpus: str) -> str:
    """A corpus file as the workers find it (on another host: at the same path)."""
    target, colon, name = corpus.partition(":")
    return f"{Path(target).resolve()}{colon}{name}" if target.endswith(".py") else corpus


def _kinds_of_workers(distributed: Any, client: Any, per_gpu: bool = False) -> dict[Kind, int]:
    """The kinds of the cluster's workers (target and compiler, each reported by the worker itself), with
    how many workers each has; `per_gpu`: a local cluster of a worker per GPU counted, whose workers that
    see no GPU are retired first (`without_unseen_gpus`). Each worker also holds a resource named for its
    kind (set by `KindResource` as it starts, again when restarted), which a task for that kind asks for."""
    client.wait_for_workers(1, timeout=120)
    client.register_plugin(_kind_resource_plugin(distributed)(), name="tuned-kernels-kind")
    resources = client.run(_worker_resources)
    missing = [address for address, held in resources.items() if GPU not in held]
    if missing:
        raise TunedKernelsError(
            f"worker {missing[0]} declares no {GPU} resource: start one worker per GPU with --resources {GPU}=1"
        )
    reported = client.run(worker_kind)
    if per_gpu:
        reported = without_unseen_gpus(client, reported)
    kinds: dict[Kind, int] = {}
    for _, (target, compiler) in sorted(reported.items()):
        kind = Kind.of(target, compiler)
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def without_unseen_gpus(
    client: Any, reported: dict[str, tuple[model.Target, model.CompilerFingerprint]]
) -> dict[str, tuple[model.Target, model.CompilerFingerprint]]:
    """The workers of a cluster started per GPU, less those whose GPU CUDA does not show (the driver lists
    one it cannot use: such a worker reports the cpu target), which are retired: where CUDA shows none
    (a torch without CUDA), one worker stays, on Triton's interpreter, as one process would run."""
    cpu = sorted(address for address, (target, _) in reported.items() if target.arch == "cpu")
    unseen = cpu if len(cpu) < len(reported) else cpu[1:]
    if unseen:
        client.retire_workers(workers=unseen, close_workers=True, remove=True)
    return {address: kind for address, kind in reported.items() if address not in unseen}


def _workers_by_host(client: Any) -> dict[str, int]:
    """How many of the cluster's workers run on each host."""
    hosts = [info.get("host", "") for info in client.scheduler_info(n_workers=-1)["workers"].values()]
    return {host: hosts.count(host) for host in set(hosts)}


def _worker_resources(dask_worker: Any) -> dict[str, float]:
    return dict(dask_worker.state.total_resources)


def kind_resource(kind: Kind) -> str:
    return f"tuned-kernels:{kind.label}"


def _kind_resource_plugin(distributed: Any) -> type:
    """A worker plugin (defined once Dask is imported) that gives its worker the resource of its kind."""

    class KindResource(distributed.WorkerPlugin):  # type: ignore[misc]
        async def setup(self, worker: Any) -> None:
            import asyncio

            target, compiler = await asyncio.get_running_loop().run_in_executor(None, worker_kind)
            await worker.set_resources(**{kind_resource(Kind.of(target, compiler)): 1})

    return KindResource


def _files_for(request: TuneRequest, kinds: Sequence[Kind], created_at: str) -> dict[Kind, KindFile]:
    """Each kind's file; with --resume, the finished keys of the file already there for that kind. The
    kind of an existing output file (its header) keeps its name: a resumed run names files as before."""
    from tuned_kernels.results import read_results

    existing = Path(request.output)
    first_kind = None
    if request.resume and existing.exists() and "{" not in request.output:
        header = read_results(existing).header
        first_kind = Kind.of(header.target, header.compiler)
    ordered = sorted(kinds, key=lambda k: (k != first_kind, k.label))
    files = {}
    for i, kind in enumerate(ordered):
        path = output_for(request.output, kind, first=i == 0)
        header = model.Header(kind.target, kind.compiler, model.Producer.TUNE, TOOL_VERSION, created_at)
        files[kind] = KindFile(path, header)
        if request.resume and path.exists():
            files[kind].add(read_results(path))
    return files


class _Run:
    """One `--dask` run's work, kind by kind: a stream on each worker of the kind, claiming keys from the
    kind's queue of positions in the run's order and telling each one it finished; then a task of one key
    for any key no stream told (a worker that died holding it); then the kind's implementation choices, with
    every winner. Each told key's entries go to its kind's file as they come."""

    def __init__(
        self,
        distributed: Any,
        client: Any,
        request: TuneRequest,
        spec: str,
        items: Sequence[WorkItem],
        kept: Sequence[int],
        files: dict[Kind, KindFile],
        workers: dict[Kind, int],
    ) -> None:
        self.distributed, self.client, self.items, self.files, self.workers = (
            distributed, client, items, files, workers,
        )  # fmt: skip
        self.spec = spec  # what every task is given (`worker_spec`)
        choices = [i for i in kept if is_choice(items[i])]
        others = [i for i in kept if not is_choice(items[i])]
        self.streamed, self.after = (others, choices) if others else (choices, [])
        budget = request.options.time_budget_s  # no key starts after it, on any worker (as in one process)
        self.deadline = None if budget is None else time.time() + budget
        token = uuid.uuid4().hex
        self.queues = {kind: (f"tuned-kernels-{token}-claims-{n}", f"tuned-kernels-{token}-told-{n}")
                       for n, kind in enumerate(files)}  # fmt: skip
        self.told: dict[Kind, set[int]] = {kind: set() for kind in files}  # positions of `streamed`
        self.reports: list[TuneReport] = []
        self.progress, self.finished, self.started = Progress(sys.stderr), 0, time.monotonic()
        self.total = (len(self.streamed) + len(self.after)) * len(files)

    def run(self) -> list[TuneReport]:
        """The run's work; its reports."""
        claims = {
            kind: self.distributed.Queue(self.queues[kind][0], client=self.client) for kind in self.files
        }
        try:
            self.follow_streams(claims)
        finally:  # however the run ends (Ctrl-C), streams still running find no key left to take
            for queue in claims.values():
                with contextlib.suppress(Exception):
                    queue.get(batch=True)
        untold = [(kind, self.streamed[p]) for kind in self.files for p in range(len(self.streamed))
                  if p not in self.told[kind]]  # fmt: skip
        for work in (untold, [(kind, i) for kind in self.files for i in self.after]):
            if work and self.deadline is not None and time.time() >= self.deadline:  # no key would start
                self.reports.append(TuneReport(stopped_early=True))
                continue
            self.run_tasks(work)
        self.progress.close()
        for file in self.files.values():
            if not file.path.exists():
                file.save()  # a kind with nothing new still writes a valid file
        return self.reports

    def follow_streams(self, claims: dict[Kind, Any]) -> None:
        """Every kind's streams started, and what they tell kept until all of them ended."""
        streams = {f: kind for kind in self.files for f in self.start_streams(kind, claims[kind])}
        told = {kind: self.distributed.Queue(self.queues[kind][1], client=self.client) for kind in self.files}
        while any(not f.done() for f in streams):
            if not self.take_told(told):
                time.sleep(POLL_S)
        self.take_told(told)  # what a stream told before it ended
        for future in streams:
            with contextlib.suppress(Exception):  # a stream that failed: its keys untold are tuned after
                self.reports.append(TuneReport.from_json(future.result()["report"]))

    def start_streams(self, kind: Kind, claims: Any) -> list[Any]:
        """The kind's queue of positions filled, and a stream submitted for each of its workers."""
        for position in [*range(len(self.streamed)), *[END] * (2 * self.workers.get(kind, 1))]:
            claims.put(position)
        answers = self.files[kind].answers()
        return [
            self.client.submit(
                stream_on_worker,
                self.spec,
                self.streamed,
                answers,
                self.deadline,
                *self.queues[kind],
                key=f"stream-{kind.label}-{n}-{self.queues[kind][0]}",
                resources=self.resources(kind),
                retries=RETRIES,
                pure=False,
            )
            for n in range(self.workers.get(kind, 1))
        ]

    def take_told(self, told: dict[Kind, Any]) -> bool:
        """What the streams told since last asked, kept; False when there was nothing."""
        any_told = False
        for kind, queue in told.items():
            for message in queue.get(batch=True):
                any_told = True
                read = read_told(message)
                if read is None:  # not what a stream sends: that key (if one is named) is tuned again after
                    continue
                position, results, report, said = read
                self.told[kind].add(position)
                self.keep(kind, results)
                self.reports.append(report)
                self.tell([said])
        return any_told

    def run_tasks(self, work: Sequence[tuple[Kind, int]]) -> None:
        """A task for each (kind, item), every one out at once; what each found kept as it finishes."""
        from tuned_kernels.results.files import decode_results

        futures = {self.submit(kind, i): (kind, i) for kind, i in work}
        for future in self.distributed.as_completed(list(futures)):
            kind, i = futures[future]
            try:
                returned = future.result()
                self.keep(kind, decode_results(returned["results"], "worker.pb"))
                self.reports.append(TuneReport.from_json(returned["report"]))
                self.tell(returned["said"])
            except Exception as exc:  # a task that failed every retry: the run goes on without its key
                item = self.items[i]
                self.reports.append(
                    TuneReport(failed=[f"{item.family.name} {item.case.id} on {kind.label}: {exc}"])
                )
                self.tell([(item.family.name, item.case.id, 0, f"FAILED: {exc}")])

    def submit(self, kind: Kind, i: int) -> Any:
        answers = self.files[kind].answers()  # in each task: data scattered to a worker dies with it
        return self.client.submit(
            tune_on_worker, self.spec, (i,), answers, self.deadline,
            key=f"tune-{kind.label}-{i}-{self.queues[kind][0]}", resources=self.resources(kind),
            retries=RETRIES, pure=False,
        )  # fmt: skip

    def resources(self, kind: Kind) -> dict[str, int]:
        return {GPU: 1, kind_resource(kind): 1}

    def keep(self, kind: Kind, results: model.Results) -> None:
        if results.entries:
            self.files[kind].add(results)
            self.files[kind].save()

    def tell(self, said: Sequence[Sequence[Any]]) -> None:
        """One progress line per item finished (its worker's summary of it)."""
        for family, case, measured, summary in said:
            self.finished += 1
            event = ProgressEvent(self.finished, self.total, family, case, measured, measured, None, None,
                                  time.monotonic() - self.started, summary)  # fmt: skip
            self.progress(event)


def read_told(message: Any) -> tuple[int, model.Results, TuneReport, Said] | None:
    """A stream's message about a key it finished, read with the checks of any results file: its position,
    entries, report and summary; None for anything else."""
    from tuned_kernels.results.files import decode_results

    try:
        family, case, measured, summary = message["said"]
        said = (str(family), str(case), int(measured), str(summary))
        results = decode_results(message["results"], "told.pb")
        return int(message["position"]), results, TuneReport.from_json(message["report"]), said
    except Exception:
        return None
