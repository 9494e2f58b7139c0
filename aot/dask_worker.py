"""What runs on a Dask worker for `tune --dask`: a stream that tunes the keys it claims, one at a time from
the run's queue on the scheduler, until none is left (as tune's own worker processes take theirs from
claim files), telling the client each finished key as it finishes; a task that tunes given keys (those no
stream finished, and implementation choices); and the warm-up as the run starts.

Keys go out in the run's order through a `distributed.Queue` of positions: each worker gets the next one when
it reaches it, so a GPU that finishes early takes more, and the next key's configs compile on its threads
while the one before is measured, across keys of every size. What a worker sends back is our results
format and plain numbers, never a pickled object of ours.

Light until a worker starts (no torch): the client imports it before its own torch import, and
`--dask local` has each worker import it as it starts (Dask's preload, `dask_setup`), which brings the
heavy modules in there, beside the client's.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import json
import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tuned_kernels.aot.corpus_loader import load_corpus, select_families
from tuned_kernels.aot.progress import ProgressEvent
from tuned_kernels.aot.tune_report import TuneReport, TuneTimes, shared_jobs
from tuned_kernels.aot.tune_request import TuneRequest
from tuned_kernels.aot.work import EVERY_ITEM, WorkItem, work_items

from tuned_kernels import model

if TYPE_CHECKING:
    from tuned_kernels.aot.tune_run import TuneRun
    from tuned_kernels.aot.tuner import Tuner

END = -1  # put after the run's positions, once per stream: no key left
LAST_WAIT_S = 5.0  # a stream that finds the queue empty (its END taken by a stream re-run) waits this long


class QueueClaims:
    """A stream's claims: the positions it gets from the run's queue, in the order handed out (every stream
    gets them in increasing order, so an item before the one it holds is another stream's)."""

    def __init__(self, queue: Any) -> None:
        self.queue = queue
        self.held: int | None = None  # the position got and not yet reached

    def take(self, index: int) -> bool:
        if self.held is None:
            self.held = self._next()
        if self.held != index:
            return False
        self.held = None
        return True

    def _next(self) -> int:
        if _cancelled():  # the client is gone (its run stopped): take no more keys
            return NONE_LEFT
        try:
            position = int(self.queue.get(timeout=LAST_WAIT_S))
        except (TimeoutError, asyncio.TimeoutError):  # (not one class before Python 3.11)
            position = END
        return position if position != END else NONE_LEFT


NONE_LEFT = 1 << 62  # a position past every item: none is this stream's


def _cancelled() -> bool:
    """Whether the scheduler let go of the task running here (its client stopped): a running task is not
    interrupted, so a stream asks before each key it takes."""
    try:
        import distributed

        worker = distributed.get_worker()
        return str(worker.state.tasks[worker.get_current_task()].state) == "cancelled"
    except Exception:  # not on a worker, or a Dask that keeps its task states otherwise: go on
        return False


def stream_on_worker(
    spec: str, order: Sequence[int], answers: bytes, deadline: float | None, claims: str, told: str
) -> dict[str, Any]:
    """Runs on a worker: tunes the items of the request `spec` at the positions of `order` it claims from
    the queue named `claims`, given its kind's finished entries (`answers`); each claimed item finished
    (tuned, skipped or failed) is told on the queue named `told` with its new entries and what it added to
    the report. Returns the stream's report: its GPU's time split and times (its counts are in the told)."""
    from tuned_kernels.aot.tune_run import TuneRun

    items, tuner, done = _task_state(spec, answers, deadline)
    out = _queue(told)
    sent = set(done)
    run = TuneRun(tuner, [items[i] for i in order], done, QueueClaims(_queue(claims)), _worker_name())
    counted = copy.deepcopy(run.report)

    def tell(position: int, said: Said) -> None:
        nonlocal counted
        new = tuple(e for slot, e in done.items() if slot not in sent)
        sent.update(e.slot for e in new)
        added, counted = run.report.since(counted), copy.deepcopy(run.report)
        out.put({
            "position": position, "said": list(said), "results": _encoded(tuner, new),
            "report": dataclasses.asdict(added),
        })  # fmt: skip

    tuner.on_progress = summaries(tell)
    report = _run(run)
    return {"report": dataclasses.asdict(report.times_only())}


def tune_on_worker(
    spec: str, indices: Sequence[int], answers: bytes, deadline: float | None
) -> dict[str, Any]:
    """Runs on a worker: tunes items `indices` of the request `spec` in order, given its kind's finished
    entries (`answers`: skipped when its key is among them, and what an implementation choice launches
    with), starting none after `deadline` (time.time()). Returns the new entries with their compiled
    kernels, as our results format, and the report."""
    from tuned_kernels.aot.tune_run import TuneRun

    items, tuner, done = _task_state(spec, answers, deadline)
    before = set(done)
    said: list[Said] = []  # each item's summary, as a one-process tune prints it
    tuner.on_progress = summaries(lambda _, line: said.append(line))
    report = _run(TuneRun(tuner, [items[i] for i in indices], done, EVERY_ITEM, _worker_name()))
    new = tuple(e for slot, e in done.items() if slot not in before)  # in the order tuned
    return {"results": _encoded(tuner, new), "report": dataclasses.asdict(report), "said": said}


Said = tuple[str, str, int, str]  # an item's family, case, configs measured and summary


def summaries(tell: Callable[[int, Said], None]) -> Callable[[ProgressEvent], None]:
    """A tuner's progress callback that calls `tell` once per item finished (tuned, skipped or failed), with
    its position in the run and what a one-process tune prints of it (its configs measured counted from
    the events before: the summary's own says none)."""
    measured: dict[tuple[str, str], int] = {}

    def on_progress(event: ProgressEvent) -> None:
        item = (event.family, event.case)
        measured[item] = max(measured.get(item, 0), event.configs_done)
        if event.summary is not None:
            tell(event.index - 1, (*item, measured[item], event.summary))

    return on_progress


def _task_state(
    spec: str, answers: bytes, deadline: float | None
) -> tuple[Sequence[WorkItem], Tuner, dict[model.EntrySlot, model.Entry]]:
    """This worker's items and tuner, readied for one task: its own times and blobs, the time left until
    `deadline`, and the finished entries it starts from."""
    import time

    from tuned_kernels.hardware.probe import interpret_without_gpu

    interpret_without_gpu()  # before the corpus defines its kernels: the interpreter on a CPU worker
    import distributed

    from tuned_kernels.results.files import decode_results

    given = json.loads(spec)
    items, tuner = _state_for(given["request"])
    tuner.blobs.clear()
    tuner.times = TuneTimes()  # this task's own
    budget = None if deadline is None else max(0.0, deadline - time.time())
    # the compile threads: this host's CPUs shared among the run's workers on it, as they stand now
    host = _host_of(distributed.get_worker())
    shared = shared_jobs(TuneRequest.from_json(given["request"]).options, _sharing(given, host))
    tuner.options = dataclasses.replace(shared, time_budget_s=budget)
    return items, tuner, {e.slot: e for e in decode_results(answers, "answers.pb").entries}


def _run(run: TuneRun) -> TuneReport:
    from tuned_kernels import resolving

    with resolving.installed(None):  # the tuner measures configs itself: bundles must not answer for it
        return run.run(lambda _: None)


def _encoded(tuner: Tuner, entries: tuple[model.Entry, ...]) -> bytes:
    from tuned_kernels.aot.tune_command import header_now

    from tuned_kernels.results.files import encode_results

    header = header_now(tuner.target, model.Producer.TUNE, "1970-01-01T00:00:00Z")
    return encode_results(
        model.Results(header, entries, model.referenced_blobs(entries, tuner.blobs)), "r.pb"
    )


def _queue(name: str) -> Any:
    """The run's queue `name` on the scheduler, through this worker's client."""
    import distributed

    queue: Any = distributed.Queue
    return queue(name, client=distributed.get_client())


def _worker_name() -> str:
    """The Dask worker running this task, as the time split names its GPU."""
    import distributed

    return str(distributed.get_worker().name)


def worker_spec(request_json: dict[str, Any], workers_by_host: dict[str, int]) -> str:
    """What every task of a run is given: the request, and how many of the cluster's workers each host
    runs (their compile threads share its CPUs)."""
    return json.dumps({"request": request_json, "hosts": workers_by_host}, sort_keys=True)


async def warm_up(spec: str) -> None:
    """Runs on each worker as the run starts, off its event loop (which keeps answering the scheduler): the
    corpus loaded, the tuner made and the first key probed on `meta` (its one-time imports), while the
    client still finds the order."""
    await asyncio.get_running_loop().run_in_executor(None, _warm, spec)


def _host_of(worker: Any) -> str:
    from distributed.comm.addressing import get_address_host

    return str(get_address_host(worker.address))


def _warm(spec: str) -> None:
    """Best effort: a worker that fails here fails its first task alike, which says why."""
    _warm_for(json.loads(spec)["request"])


def _warm_for(request_json: dict[str, Any]) -> None:
    """The run's state made and its first key probed on `meta`, once per run (a warm-up begun as the worker
    started is waited for, not repeated)."""
    import contextlib

    from tuned_kernels.hardware.probe import interpret_without_gpu

    interpret_without_gpu()
    from tuned_kernels.aot.tuner import slot_on_meta

    with contextlib.suppress(Exception):
        _state_for(request_json, probe=slot_on_meta)


def worker_kind() -> tuple[model.Target, model.CompilerFingerprint]:
    """Runs on a worker: its target and compiler (found once; a caller while it is found waits for it)."""
    with _KIND_LOCK:
        return _found_kind()


_KIND_LOCK = threading.Lock()


@functools.cache
def _found_kind() -> tuple[model.Target, model.CompilerFingerprint]:
    from tuned_kernels.hardware import compiler_fingerprint, detect
    from tuned_kernels.hardware.probe import interpret_without_gpu

    interpret_without_gpu()
    target = detect()
    return target, compiler_fingerprint(target)


_WORKER_STATE: dict[str, tuple[Sequence[WorkItem], Tuner]] = {}
_STATE_LOCK = threading.Lock()  # held while a run's state is made: a second caller waits, not remakes it


def _sharing(given: dict[str, Any], host: str) -> int:
    """How many of the run's workers (`given`: its spec, read) share `host` (and its CPUs)."""
    return max(1, int(given["hosts"].get(host, 1)))


def _state_for(
    request_json: dict[str, Any], probe: Callable[[WorkItem], object] | None = None
) -> tuple[Sequence[WorkItem], Tuner]:
    """The items and tuner of the run `request_json`, made once and kept (its first item given to `probe`
    as it is made); how many workers share the host is applied per task (`_task_state`)."""
    from tuned_kernels.aot.tune_command import tuner_for
    from tuned_kernels.hardware import detect

    key = json.dumps(request_json, sort_keys=True)
    with _STATE_LOCK:
        if key in _WORKER_STATE:
            return _WORKER_STATE[key]
        request = TuneRequest.from_json(request_json)
        families = select_families(load_corpus(request.corpus), request.kernels)
        items = work_items(families, request.shapes, request.options.shard)
        tuner = tuner_for(request, detect(), lambda _: None, {})
        _WORKER_STATE[key] = (items, tuner)
        if probe is not None and items:
            probe(items[0])
        return items, tuner


EARLY_WARM = "TUNED_KERNELS_DASK_WARM"  # a local worker's environment: the run (request) it warms up for


def _warm_early(request_text: str) -> None:
    """On a thread of a starting local worker: its kind found and the run warmed up, while the worker
    registers and the client still loads the corpus (the client's own warm-up then waits for this one)."""
    import contextlib

    with contextlib.suppress(Exception):
        worker_kind()
        _warm_for(json.loads(request_text))


def dask_setup(worker: Any) -> None:
    """Dask's preload hook, run as a worker of `--dask local` starts (before it takes a task): the
    interpreter chosen where there is no GPU, then the modules every task needs imported (torch, Triton,
    the tuner), while the client imports its own; given the run (`EARLY_WARM`), its warm-up begins on a
    thread of its own as the worker goes on to register."""
    from tuned_kernels.hardware.probe import interpret_without_gpu

    interpret_without_gpu()
    import tuned_kernels.aot.tune_command  # noqa: F401  (torch, Triton and the tuner with it)

    given = os.environ.get(EARLY_WARM)
    if given:
        threading.Thread(target=_warm_early, args=(given,), name="tuned-kernels-warm", daemon=True).start()
