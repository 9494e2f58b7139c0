"""`tuned-kernels tune --dask ADDRESS`: a corpus tuned on a Dask cluster, up to 4 consecutive (family, case)
items a task (the next one's configs compile while one is measured), on one GPU of one worker.

- Workers report their target and compiler first; every key is tuned once per kind of worker (a mixed
  cluster yields one results file per GPU type and compiler), on a worker of that kind only.
- Each task asks for one `GPU` resource: a worker runs as many tuning tasks at once as it has GPUs
  declared (`dask worker --resources GPU=1`, one worker per GPU; `--dask local` starts such a cluster on
  this machine). A worker that dies mid-key has that key re-run elsewhere by the scheduler.
- The client writes each kind's file (atomically) as tasks finish, so `--resume` after the client itself
  was stopped keeps every key of a finished task (those of tasks still running are tuned again); what a
  worker returns is our results format, read back with the same checks as any file, never a pickled
  object of ours.
- `--time-budget` is a deadline each task reads: no key starts after it, on any worker.
- Keys of implementation choices (which time the kernels tuned before them with their winners) run after
  every other key of their kind finished, with those winners.

Dask is optional (`pip install 'tuned-kernels[dask]'`) and imported only here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import socket
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuned_kernels.aot.corpus_loader import load_corpus, select_families
from tuned_kernels.aot.kinds import is_choice
from tuned_kernels.aot.progress import Progress, ProgressEvent
from tuned_kernels.aot.tune_command import TuneRequest, header_now, tuner_for
from tuned_kernels.aot.tune_report import TuneReport, TuneTimes, combined, merge_reports, time_split
from tuned_kernels.aot.tune_run import TuneRun
from tuned_kernels.aot.tuner import slot_on_meta, tuning_order
from tuned_kernels.aot.work import EVERY_ITEM, WorkItem, visible_device_id, work_items

from tuned_kernels import model
from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.naming import compiler_digest, safe_arch, safe_version
from tuned_kernels.version import TOOL_VERSION

GPU = "GPU"  # the worker resource a task takes: one GPU
RETRIES = 2  # a task that raises is tried this many more times (a dead worker's task is re-run anyway)
LOCAL = "local"
DEFAULT_TIMEOUT_S = 30.0  # how long a scheduler at an address has to answer (--dask-timeout)


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
    families = select_families(load_corpus(request.corpus), request.kernels)
    items = work_items(families, request.shapes, request.options.shard)  # each worker makes them alike
    with ThreadPoolExecutor(1, thread_name_prefix="tuned-kernels-order") as ordering:
        # the indices of `items` to tune, in order: found here, once, while the cluster starts
        order = ordering.submit(tuning_order, items)
        with _client(distributed, address, timeout_s) as client:
            workers = _kinds_of_workers(distributed, client)
            with contextlib.suppress(Exception):  # best effort: a worker that fails here fails its task alike
                client.run(warm_up, json.dumps(request.to_json()))
            kept = order.result()
            startup = time.monotonic() - start  # the cluster up, every worker's kind known and warm
            files = _files_for(request, list(workers), created_at)
            reports = _tune_every_kind(distributed, _Run(client, request, items, kept, files, workers))
    report = merge_reports(reports, time.monotonic() - start)
    report.cases, report.same_key = len(items) * len(files), (len(items) - len(kept)) * len(files)
    report.outputs = [str(f.path) for f in files.values()]
    report.startup_seconds = startup
    report.gpus = combined(report.gpus)
    report.time_split = time_split(report.gpus, started, started + report.seconds)
    return report


def _absolute(corpus: str) -> str:
    """A corpus file as the workers find it (on another host: at the same path)."""
    target, colon, name = corpus.partition(":")
    return f"{Path(target).resolve()}{colon}{name}" if target.endswith(".py") else corpus


@contextlib.contextmanager
def _client(distributed: Any, address: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> Iterator[Any]:
    """A client of the cluster at `address` (given `timeout_s` to answer), or of one started here for
    `local` (a worker per visible GPU, or `local:N`: N workers, each with one GPU resource)."""
    if address != LOCAL and not address.startswith(f"{LOCAL}:"):
        reach(address, timeout_s)
        with distributed.Client(address, timeout=f"{timeout_s}s") as client:
            yield client
        return
    specs = _local_workers(address)
    workers = {
        f"gpu{i}": {
            "cls": distributed.Nanny,
            "options": {"nthreads": 1, "resources": {GPU: 1}, "env": env, "silence_logs": logging.ERROR},
        }
        for i, env in enumerate(specs)
    }
    scheduler = {"cls": distributed.Scheduler, "options": {"dashboard_address": None}}
    with (
        distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=40) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def reach(address: str, timeout_s: float) -> None:
    """Fails at once when nothing listens at a TCP scheduler's address (a refused connection), and within
    `timeout_s` when nothing answers; other addresses (tls://, ucx://, a scheduler file) are left to Dask."""
    scheme, sep, rest = address.partition("://")
    host_port = rest if sep else scheme
    if sep and scheme != "tcp":
        return
    host, colon, port = host_port.rpartition(":")
    if not colon or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except TimeoutError:
        raise TunedKernelsError(
            f"--dask {address}: no answer within {timeout_s:g} s (--dask-timeout)"
        ) from None
    except OSError as exc:
        raise TunedKernelsError(
            f"--dask {address}: cannot reach the scheduler: {exc.strerror or exc}"
        ) from None


def _local_workers(address: str) -> list[dict[str, str]]:
    """Each local worker's environment: one per visible GPU (seeing that GPU alone), or `local:N` workers."""
    _, _, count = address.partition(":")
    if count:
        if not count.isdigit() or int(count) < 1:
            raise TunedKernelsError(f"--dask {address}: want local or local:N with N >= 1")
        return [{} for _ in range(int(count))]
    import torch

    gpus = torch.cuda.device_count()
    return [{"CUDA_VISIBLE_DEVICES": visible_device_id(gpu)} for gpu in range(gpus)] or [{}]


def _kinds_of_workers(distributed: Any, client: Any) -> dict[Kind, int]:
    """The kinds of the cluster's workers (target and compiler, each reported by the worker itself), with
    how many workers each has. Each worker also holds a resource named for its kind (set by `KindResource`
    as it starts, again when restarted), which a task for that kind asks for."""
    client.wait_for_workers(1, timeout=120)
    client.register_plugin(_kind_resource_plugin(distributed)(), name="tuned-kernels-kind")
    resources = client.run(_worker_resources)
    missing = [address for address, held in resources.items() if GPU not in held]
    if missing:
        raise TunedKernelsError(
            f"worker {missing[0]} declares no {GPU} resource: start one worker per GPU with --resources {GPU}=1"
        )
    reported = client.run(worker_kind)
    kinds: dict[Kind, int] = {}
    for _, (target, compiler) in sorted(reported.items()):
        kind = Kind.of(target, compiler)
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def _worker_resources(dask_worker: Any) -> dict[str, float]:
    return dict(dask_worker.state.total_resources)


@functools.cache
def worker_kind() -> tuple[model.Target, model.CompilerFingerprint]:
    """Runs on a worker: its target and compiler."""
    from tuned_kernels.hardware import compiler_fingerprint, detect
    from tuned_kernels.hardware.probe import interpret_without_gpu

    interpret_without_gpu()
    target = detect()
    return target, compiler_fingerprint(target)


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
    """One `--dask` run's tasks: a few consecutive items each (a worker compiles the next item's configs
    while it measures one, as a one-process tune does), fewer toward the end (`chunked`); per kind, two tasks
    a worker are out at a time (one running, the next waiting on it), the implementation choices of a kind
    once the rest of that kind finished; each finished task's entries go to its kind's file."""

    def __init__(
        self,
        client: Any,
        request: TuneRequest,
        items: Sequence[WorkItem],
        kept: Sequence[int],
        files: dict[Kind, KindFile],
        workers: dict[Kind, int],
    ) -> None:
        self.client, self.items, self.files = client, items, files
        self.spec = json.dumps(request.to_json())
        choices = {i for i in kept if is_choice(items[i])}
        self.later = sorted(choices)
        self.first = [i for i in kept if i not in choices]
        starting = self.first or self.later  # a corpus of implementation choices alone starts with them
        self.backlog = {kind: chunked(starting, workers.get(kind, 1)) for kind in files}
        self.window = {kind: 2 * workers.get(kind, 1) for kind in files}
        budget = request.options.time_budget_s  # no key starts after it, on any worker (as in one process)
        self.deadline = None if budget is None else time.time() + budget
        self.pending: dict[Any, tuple[Kind, tuple[int, ...]]] = {}
        self.waiting_for_first = dict.fromkeys(files, len(self.first))
        self.reports: list[TuneReport] = []

    def start(self) -> list[Any]:
        """The first tasks of every kind."""
        return [f for kind in self.files for f in self.next_of(kind, self.window[kind])]

    def next_of(self, kind: Kind, count: int) -> list[Any]:
        """Up to `count` more of `kind`'s tasks submitted."""
        chunks, self.backlog[kind] = self.backlog[kind][:count], self.backlog[kind][count:]
        return [self.submit(kind, chunk) for chunk in chunks]

    def submit(self, kind: Kind, chunk: tuple[int, ...]) -> Any:
        answers = self.files[kind].answers()  # in each task: data scattered to a worker dies with it
        future = self.client.submit(
            tune_on_worker, self.spec, chunk, answers, self.deadline,
            key=f"tune-{kind.label}-{chunk[0]}-{chunk[-1]}", resources={GPU: 1, kind_resource(kind): 1},
            retries=RETRIES, pure=False,
        )  # fmt: skip
        self.pending[future] = (kind, chunk)
        return future

    def collect(self, future: Any) -> tuple[list[Sequence[Any]], list[Any]]:
        """A finished task's entries saved to its kind's file: what to tell of each of its items, and the
        tasks it lets start (the next of its kind; its kind's implementation choices, after its last other
        item)."""
        from tuned_kernels.results.files import decode_results

        kind, chunk = self.pending.pop(future)
        try:
            returned = future.result()
            results = decode_results(returned["results"], "worker.pb")
            report, said = TuneReport.from_json(returned["report"]), returned["said"]
        except Exception as exc:  # a task that failed every retry: the run goes on without those keys
            cases = ", ".join(self.items[i].case.id for i in chunk)
            report = TuneReport(failed=[f"{self.items[chunk[0]].family.name} {cases} on {kind.label}: {exc}"])
            results, said = (
                None,
                [(self.items[i].family.name, self.items[i].case.id, 0, f"FAILED: {exc}") for i in chunk],
            )
        more = self.next_of(kind, 1)  # submitted before the file is written: its worker is not kept waiting
        if results is not None and results.entries:
            self.files[kind].add(results)
            self.files[kind].save()
        self.reports.append(report)
        if chunk[0] in self.later or not self.first:
            return said, more
        self.waiting_for_first[kind] -= len(chunk)
        if self.waiting_for_first[kind] == 0 and self.later:
            more += [self.submit(kind, chunk) for chunk in chunked(self.later, 1)]
        return said, more


def _tune_every_kind(distributed: Any, run: _Run) -> list[TuneReport]:
    """Every item on every kind of worker, with progress as tasks finish."""
    progress = Progress(sys.stderr)
    total = (len(run.first) + len(run.later)) * len(run.files)
    started, finished = time.monotonic(), 0
    queue = distributed.as_completed(run.start())
    for future in queue:
        said, more = run.collect(future)
        queue.update(more)
        finished = _tell(progress, said, finished, total, started)
    progress.close()
    for file in run.files.values():
        if not file.path.exists():
            file.save()  # a kind with nothing new still writes a valid file
    return run.reports


def chunked(indices: Sequence[int], workers: int) -> list[tuple[int, ...]]:
    """`indices` cut into consecutive tasks of up to 4 items (each compiling while the one before it is
    measured), smaller as fewer items remain: a task holds at most half the remaining items' share of one
    worker, so the last tasks, which decide when the run ends, are single items."""
    chunks, at = [], 0
    while at < len(indices):
        size = max(1, min(4, (len(indices) - at) // (2 * max(1, workers))))
        chunks.append(tuple(indices[at : at + size]))
        at += size
    return chunks


def _tell(
    progress: Progress, said: Sequence[Sequence[Any]], finished: int, total: int, started: float
) -> int:
    """One progress line per item a task finished (its worker's summary of it); the count finished now."""
    for family, case, measured, summary in said:
        finished += 1
        event = ProgressEvent(finished, total, family, case, measured, measured, None, None,
                              time.monotonic() - started, summary)  # fmt: skip
        progress(event)
    return finished


_WORKER_STATE: dict[str, tuple[Sequence[WorkItem], Any]] = {}


def tune_on_worker(
    spec: str, indices: Sequence[int], answers: bytes, deadline: float | None
) -> dict[str, Any]:
    """Runs on a worker: tunes items `indices` of the request `spec` in order, given its kind's finished
    entries (`answers`: skipped when its key is among them, and what an implementation choice launches
    with), starting none after `deadline` (time.time()). Returns the new entries with their compiled
    kernels, as our results format, and the report."""
    from tuned_kernels.hardware.probe import interpret_without_gpu

    interpret_without_gpu()  # before the corpus defines its kernels: the interpreter on a CPU worker
    from tuned_kernels.results.files import decode_results, encode_results

    items, tuner = _worker_state(spec)
    done = {e.slot: e for e in decode_results(answers, "answers.pb").entries}
    before = set(done)
    tuner.blobs.clear()
    tuner.times = TuneTimes()  # this task's own
    budget = None if deadline is None else max(0.0, deadline - time.time())
    tuner.options = dataclasses.replace(tuner.options, time_budget_s=budget)
    said: list[tuple[str, str, int, str]] = []  # each item's summary, as a one-process tune prints it
    measured: dict[tuple[str, str], int] = {}  # configs measured per item (its summary event says none)

    def tell(event: ProgressEvent) -> None:
        item = (event.family, event.case)
        measured[item] = max(measured.get(item, 0), event.configs_done)
        if event.summary is not None:
            said.append((*item, measured[item], event.summary))

    tuner.on_progress = tell
    from tuned_kernels import resolving

    with resolving.installed(None):  # the tuner measures configs itself: bundles must not answer for it
        run = TuneRun(tuner, [items[i] for i in indices], done, EVERY_ITEM, _worker_name())
        report = run.run(lambda _: None)
    new = tuple(e for slot, e in done.items() if slot not in before)  # in the order tuned
    header = header_now(tuner.target, model.Producer.TUNE, "1970-01-01T00:00:00Z")
    results = model.Results(header, new, model.referenced_blobs(new, tuner.blobs))
    return {"results": encode_results(results, "r.pb"), "report": dataclasses.asdict(report), "said": said}


def _worker_name() -> str:
    """The Dask worker running this task, as the time split names its GPU."""
    import distributed

    return str(distributed.get_worker().name)


async def warm_up(spec: str) -> None:
    """Runs on each worker as the run starts, off its event loop (which keeps answering the scheduler): the
    corpus loaded, the tuner made and the first key probed on `meta` (its one-time imports), while the
    client still finds the order."""
    import asyncio

    await asyncio.get_running_loop().run_in_executor(None, _warm, spec)


def _warm(spec: str) -> None:
    """Best effort: a worker that fails here fails its first task alike, which says why."""
    from tuned_kernels.hardware.probe import interpret_without_gpu

    interpret_without_gpu()
    with contextlib.suppress(Exception):
        items, _ = _worker_state(spec)
        if items:
            slot_on_meta(items[0])


def _worker_state(spec: str) -> tuple[Sequence[WorkItem], Any]:
    """This worker's items and tuner for the request `spec`, made at its first task (or warm-up) and kept."""
    from tuned_kernels.hardware import detect

    if spec in _WORKER_STATE:
        return _WORKER_STATE[spec]
    request = TuneRequest.from_json(json.loads(spec))
    families = select_families(load_corpus(request.corpus), request.kernels)
    items = work_items(families, request.shapes, request.options.shard)
    tuner = tuner_for(request, detect(), lambda _: None, {})
    _WORKER_STATE[spec] = (items, tuner)
    return items, tuner
