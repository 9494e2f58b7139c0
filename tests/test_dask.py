"""`tune --dask`: a corpus tuned on a real Dask cluster of worker processes (the cpu target): every key
tuned once as one process would, a worker that dies mid-key costs nothing, a client stopped and resumed
tunes no key twice, and workers of another compiler get their own file."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import forked_python
from tuned_kernels import model
from tuned_kernels.results import read_results

CORPORA = Path(__file__).parent / "corpora"
CORPUS = str(CORPORA / "dask_corpus.py")
KEYS = 6  # the corpus's cases


def tune_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


def tune_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tuned_kernels", "tune", *args]


def tune(tmp_path: Path, output: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    command = tune_command("--corpus", CORPUS, "-o", str(output), "--json", *args)
    done = forked_python.run(
        command, capture_output=True, text=True, env=env or tune_env(), cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def slots(path: Path) -> list[model.EntrySlot]:
    return sorted(e.slot for e in read_results(path).entries)


def test_without_dask_installed_dask_fails_with_one_line_saying_what_to_install(tmp_path: Path) -> None:
    hidden = tmp_path / "no_dask"
    (hidden / "distributed").mkdir(parents=True)  # what Python finds first: a package that cannot import
    (hidden / "distributed" / "__init__.py").write_text("raise ImportError('No module named distributed')\n")
    command = tune_command("--corpus", CORPUS, "-o", "r.pb", "--dask", "local")
    env = {**os.environ, "PYTHONPATH": str(hidden)}
    done = forked_python.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]
    assert "pip install 'tuned-kernels[dask]'" in done.stderr and not (tmp_path / "r.pb").exists()


def test_a_scheduler_address_where_nothing_listens_fails_with_one_line(tmp_path: Path) -> None:
    """A refused connection is said at once (Dask itself retried for its whole 60 s timeout)."""
    with socket.socket() as free:  # a port of this machine that nothing listens on once closed
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    command = tune_command("--corpus", CORPUS, "-o", "r.pb", "--dask", f"tcp://127.0.0.1:{port}")
    done = forked_python.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=30)
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]
    assert (
        "cannot reach the scheduler: Connection refused" in done.stderr and not (tmp_path / "r.pb").exists()
    )


def test_a_scheduler_that_does_not_answer_fails_after_the_stated_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tuned_kernels.aot import dask_cluster

    from tuned_kernels.errors import TunedKernelsError

    asked: list[float] = []

    def silent(address: tuple[str, int], timeout: float) -> None:
        asked.append(timeout)
        raise TimeoutError

    monkeypatch.setattr(socket, "create_connection", silent)
    with pytest.raises(TunedKernelsError, match=r"no answer within 7 s \(--dask-timeout\)"):
        dask_cluster.reach("tcp://scheduler.example:8786", 7.0)
    assert asked == [7.0]


LOCAL_CLUSTER_PROBE = """
import json, os, sys, threading, time
import distributed
from tuned_kernels.aot import dask_cluster, dask_tune, dask_worker
from tuned_kernels.aot.tune_request import TuneRequest
names = ("OMP_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_")  # what Dask's nannies set for numpy workers
here = {"torch": "torch" in sys.modules, "settings": [os.environ.get(n) for n in names]}
request = TuneRequest(output="r.pb", corpus=sys.argv[1]).to_json()

def as_started():
    for thread in threading.enumerate():  # the warm-up begun as the worker started, finished
        if thread.name == "tuned-kernels-warm":
            thread.join(60)
    return {
        "tuner": "tuned_kernels.aot.tuner" in sys.modules,
        "profiler": __import__("dask").config.get("distributed.worker.profile.enabled"),
        "settings": [os.environ.get(n) for n in names],
        "states": len(dask_worker._WORKER_STATE),
        "pid": os.getpid(),
    }

def alive(pid):  # running, not a zombie
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False

with dask_cluster.connect(distributed, "local:1", request_json=request) as client:
    (worker,) = client.run(as_started).values()
    spec = dask_worker.worker_spec(request, dask_tune._workers_by_host(client))
    client.run(dask_worker.warm_up, spec)  # the client's own warm-up, as a run makes it
    (worker["states_after_warm_up"],) = client.run(lambda: len(dask_worker._WORKER_STATE)).values()
    pid = worker.pop("pid")
    dask_cluster._end_at_once(client.cluster)  # as the run ends, before the cluster closes
    waited = time.monotonic()
    while alive(pid) and time.monotonic() - waited < 30:
        time.sleep(0.05)
    worker["ended"] = not alive(pid)
    stopping = ("closing_gracefully", "closing", "closed")  # told, or closed on seeing its worker end
    worker["nannies_stopping"] = all(n.status.name in stopping for n in client.cluster.workers.values())
print(json.dumps({"client": here, "worker": worker}))
"""


def test_a_local_cluster_starts_before_the_client_imports_torch_and_its_workers_import_theirs_at_once() -> (
    None
):
    """`--dask local` starts its workers while the client loads the corpus: the modules it needs to start
    them import no torch; each worker imports the tuner's modules as it starts, before any task (Dask's
    preload), and begins the run's warm-up then, which the client's own warm-up finds made; it samples no
    stacks beside the timer (Dask's profiler, off) and runs in the client's environment, as tune's own
    workers do (not with Dask's settings for numpy workers). As the run ends, its workers are killed, their
    nannies told first not to start them again."""
    done = subprocess.run(  # a new interpreter: what it imported first is the claim
        [sys.executable, "-c", LOCAL_CLUSTER_PROBE, CORPUS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["client"]["torch"] is False
    assert seen["worker"] == {
        "tuner": True,
        "profiler": False,
        "settings": seen["client"]["settings"],
        "states": 1,  # made as it started
        "states_after_warm_up": 1,  # the client's warm-up found it made
        "ended": True,  # killed at once
        "nannies_stopping": True,  # told first, so none starts it again (a running one would)
    }


def test_two_workers_tune_every_key_once_as_one_process_would(tmp_path: Path) -> None:
    """The same keys, each with every config measured and checked, under the same header (which config
    wins may differ: the interpreter's wall-clock timings are noisy)."""
    alone, spread = tmp_path / "alone.pb", tmp_path / "spread.pb"
    one = tune(tmp_path, alone)
    report = tune(tmp_path, spread, "--dask", "local:2")
    assert (report["tuned"], report["resumed"], report["failed"]) == (KEYS, 0, [])
    assert report["artifact_note"] == one["artifact_note"] != ""  # what became of the compiled kernels
    assert slots(spread) == slots(alone) and len(slots(spread)) == KEYS
    for entry in read_results(spread).entries:  # every config measured and checked; the winner one of them
        assert (entry.configs_benchmarked, entry.rejected, entry.found_by) == (
            6,
            (),
            model.FoundBy.EXHAUSTIVE,
        )
        assert dict(entry.best.kwargs)["BLOCK"] in (16, 32, 64) and entry.best.num_warps in (1, 2)
    assert read_results(spread).header.compiler == read_results(alone).header.compiler
    assert read_results(spread).header.target == read_results(alone).header.target
    split = {gpu["gpu"]: gpu for gpu in report["time_split"]}  # where each worker's time went
    assert set(split) == {"gpu0", "gpu1"} and sum(gpu["keys"] for gpu in split.values()) == KEYS
    parts = ("startup", "probing", "compiling", "measuring", "waiting")
    for gpu in split.values():
        assert sum(gpu[p] for p in parts) == pytest.approx(report["seconds"], abs=0.05)
        assert gpu["startup"] >= report["startup_seconds"] > 0 and 0 < gpu["busy"] <= 1
    started = report["startup_split"]  # when each step of the start was done, in order
    assert list(started) == ["cluster", "corpus", "kinds", "warm"]
    assert (
        0
        < started["cluster"]
        <= started["kinds"]
        <= started["warm"]
        == pytest.approx(report["startup_seconds"], abs=0.01)
    )


def test_no_key_starts_after_the_time_budget_and_what_finished_is_kept(tmp_path: Path) -> None:
    report = tune(tmp_path, tmp_path / "r.pb", "--dask", "local:2", "--time-budget", "0.5")
    assert report["stopped_early"] and report["tuned"] < KEYS  # six keys cannot finish in half a second
    assert len(slots(tmp_path / "r.pb")) == report["tuned"]


def test_a_worker_that_dies_mid_key_has_its_key_tuned_elsewhere(tmp_path: Path) -> None:
    marker = tmp_path / "died"
    report = tune(
        tmp_path, tmp_path / "r.pb", "--dask", "local:2", env=tune_env(DASK_CORPUS_DIE_ONCE=str(marker))
    )
    assert marker.exists()  # a worker did die, running n=300
    assert (report["tuned"], report["failed"]) == (KEYS, []) and len(slots(tmp_path / "r.pb")) == KEYS


def test_a_client_stopped_mid_run_and_resumed_tunes_no_key_twice(tmp_path: Path) -> None:
    output, hold = tmp_path / "r.pb", tmp_path / "release"
    command = tune_command("--corpus", CORPUS, "-o", str(output), "--dask", "local:2")
    client = subprocess.Popen(
        command, env=tune_env(DASK_CORPUS_HOLD=str(hold)), cwd=tmp_path, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        # all but the held key and the one its stream claimed next (whose configs compile while it runs)
        first = _entries_once_written(output, at_least=KEYS - 2, deadline_s=240)
    finally:
        os.killpg(client.pid, signal.SIGKILL)  # the client and the cluster it started
        client.wait(timeout=60)
    hold.touch()
    report = tune(tmp_path, output, "--dask", "local:2", "--resume", env=tune_env(DASK_CORPUS_HOLD=str(hold)))
    assert (report["resumed"], report["tuned"]) == (len(first), KEYS - len(first))
    final = {e.slot: e for e in read_results(output).entries}
    assert len(final) == KEYS and all(final[s] == e for s, e in first.items())  # kept, not tuned again


def _entries_once_written(path: Path, at_least: int, deadline_s: float) -> dict[model.EntrySlot, model.Entry]:
    """The entries of `path` once it holds `at_least` of them (read as the client writes it, atomically)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if path.exists():
            entries = {e.slot: e for e in read_results(path).entries}
            if len(entries) >= at_least:
                return entries
        time.sleep(0.1)
    raise AssertionError(f"{path} never held {at_least} entries")


OTHER_COMPILER = '''
import dataclasses
import tuned_kernels.hardware as hardware

real = hardware.compiler_fingerprint


def dask_setup(worker):
    """This worker reports another build of Triton, as a worker of a cluster's other image would."""
    hardware.compiler_fingerprint = lambda target: dataclasses.replace(real(target), triton_hash="another-build")
'''


@pytest.fixture
def mixed_cluster(tmp_path: Path) -> Iterator[str]:
    """Two workers, one of which reports another Triton build, each with one GPU resource."""
    import distributed

    preload = tmp_path / "other_compiler.py"
    preload.write_text(OTHER_COMPILER)
    options = {"nthreads": 1, "resources": {"GPU": 1}, "silence_logs": 40}
    workers = {
        "same": {"cls": distributed.Nanny, "options": options},
        "other": {"cls": distributed.Nanny, "options": {**options, "preload": [str(preload)]}},
    }
    scheduler = {"cls": distributed.Scheduler, "options": {"dashboard_address": None}}
    with distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=40) as cluster:
        yield cluster.scheduler_address


def test_workers_of_another_compiler_get_their_own_file(tmp_path: Path, mixed_cluster: str) -> None:
    report = tune(tmp_path, tmp_path / "r.pb.zst", "--dask", mixed_cluster)
    assert report["tuned"] == 2 * KEYS and len(report["outputs"]) == 2
    files = [Path(p) for p in report["outputs"]]
    assert files[0] == tmp_path / "r.pb.zst" and files[1].name.startswith("r.cpu-triton")
    headers = [read_results(f).header for f in files]
    assert sorted(h.compiler.triton_hash == "another-build" for h in headers) == [False, True]
    assert all(len(slots(f)) == KEYS for f in files)


class ListQueue:
    """The scheduler's queue as the streams see it: first in, first out; empty raises TimeoutError."""

    def __init__(self, values: list[int]) -> None:
        self.values = values

    def get(self, timeout: float) -> int:
        if not self.values:
            raise TimeoutError
        return self.values.pop(0)


def test_streams_claim_each_key_once_in_order_as_they_reach_it_and_stop_at_the_end() -> None:
    """Two streams walking the run's items (as TuneRun asks its claims, item by item, in order), one of them
    slower: each position is tuned by exactly one of them, the faster takes more, and both stop at END."""
    from tuned_kernels.aot.dask_worker import END, QueueClaims

    queue = ListQueue([*range(10), END, END])
    fast, slow = QueueClaims(queue), QueueClaims(queue)
    taken: dict[str, list[int]] = {"fast": [], "slow": []}
    walks = {"fast": iter(range(10)), "slow": iter(range(10))}
    for turn in ["fast", "slow", "fast", "fast", "slow", "fast", "fast", "fast", "slow", "fast"] * 3:
        claims = fast if turn == "fast" else slow
        for i in walks[turn]:  # the walk goes on to the next item it claims
            if claims.take(i):
                taken[turn].append(i)
                break
    assert sorted(taken["fast"] + taken["slow"]) == list(range(10))
    assert len(taken["fast"]) > len(taken["slow"]) and taken["slow"] == sorted(taken["slow"])
    assert not any(fast.take(i) or slow.take(i) for i in range(10, 20))  # END: nothing more for either


def test_a_stream_whose_client_is_gone_takes_no_more_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """A running task is not interrupted when its client stops: the stream asks before each key it takes,
    and leaves the rest (a resumed run's streams would otherwise wait behind it for the GPU)."""
    from tuned_kernels.aot import dask_worker

    queue = ListQueue([0, 1, 2])
    claims = dask_worker.QueueClaims(queue)
    assert claims.take(0)
    monkeypatch.setattr(dask_worker, "_cancelled", lambda: True)
    assert not any(claims.take(i) for i in (1, 2)) and queue.values == [1, 2]


@pytest.mark.parametrize(
    ("archs", "kept"),
    [
        (["sm90", "cpu", "sm90", "sm90"], ["w0", "w2", "w3"]),  # the driver lists a GPU CUDA does not show
        (["cpu", "cpu", "cpu"], ["w0"]),  # a torch without CUDA: one worker, on the interpreter
        (["sm90", "sm90"], ["w0", "w1"]),
    ],
)
def test_a_local_worker_whose_gpu_cuda_does_not_show_is_retired(archs: list[str], kept: list[str]) -> None:
    """`--dask local` starts a worker per GPU the driver lists; one that CUDA does not show would report
    the cpu target and tune every key again on the interpreter, into a file of its own."""
    from tuned_kernels.aot.dask_tune import without_unseen_gpus
    from tuned_kernels.hardware import target_for_arch

    retired: list[str] = []

    class Client:
        def retire_workers(self, workers: list[str], close_workers: bool, remove: bool) -> None:
            assert close_workers and remove
            retired.extend(workers)

    reported = {f"w{i}": (target_for_arch(arch), None) for i, arch in enumerate(archs)}
    assert sorted(without_unseen_gpus(Client(), reported)) == kept
    assert sorted(retired) == sorted(set(reported) - set(kept))


def test_each_worker_learns_how_many_of_the_clusters_workers_share_its_host() -> None:
    from tuned_kernels.aot.dask_tune import _workers_by_host

    class Client:
        def scheduler_info(self, n_workers: int) -> dict:
            assert n_workers == -1  # every worker, not Dask's first few
            hosts = ["10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.1"]
            return {"workers": {f"tcp://{h}:{4000 + i}": {"host": h} for i, h in enumerate(hosts)}}

    assert _workers_by_host(Client()) == {"10.0.0.1": 3, "10.0.0.2": 1}


def test_a_told_message_that_is_not_a_streams_is_left_out_and_its_key_tuned_again(tmp_path: Path) -> None:
    """The client reads what streams tell it with the checks of any results file: a message it cannot read
    (a worker of another build, a damaged one) is not kept and its key is not counted as told, so a task of
    its own tunes it after the streams; a good message beside it is kept."""
    import dataclasses

    from tuned_kernels.aot.dask_tune import Kind, KindFile, _Run
    from tuned_kernels.aot.tune_report import TuneReport
    from tuned_kernels.aot.tune_request import TuneRequest

    from tests import factories
    from tuned_kernels.results.files import encode_results

    results = factories.results(factories.entry())
    kind = Kind.of(results.header.target, results.header.compiler)
    file = KindFile(tmp_path / "r.pb", results.header)
    request = TuneRequest(corpus=CORPUS, output=str(file.path))
    run = _Run(None, None, request, "", [], [], {kind: file}, {kind: 1})
    good = {"position": 1, "results": encode_results(results, "r.pb"), "said": ["f", "c", 2, "best ..."],
            "report": dataclasses.asdict(TuneReport(tuned=1))}  # fmt: skip
    damaged = {**good, "position": 0, "results": b"\x00not a results file"}

    class Told:
        def get(self, batch: bool) -> list[dict]:
            return [damaged, good]

    assert run.take_told({kind: Told()})
    assert run.told[kind] == {1} and [e.slot for e in read_results(file.path).entries] == [
        e.slot for e in results.entries
    ]
    assert sum(r.tuned for r in run.reports) == 1


def test_implementation_choices_are_tuned_after_the_kernels_they_choose_between(tmp_path: Path) -> None:
    """ops.matmul's choice times the Triton matmul with its winner: its keys start once every matmul key of
    the kind finished (the progress lines, in the order the tasks finished)."""
    command = tune_command(
        "--kernels", "matmul", "--kernels", "matmul_impl", "--dask", "local:2", "-o", "r.pb"
    )
    done = forked_python.run(
        command,
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    families = [
        line.split("] ", 1)[1].split(" ", 1)[0] for line in done.stderr.splitlines() if line.startswith("[")
    ]
    assert "matmul_impl" in families and "matmul" in families, done.stderr[-2000:]
    assert families.index("matmul_impl") > max(i for i, f in enumerate(families) if f == "matmul")


def test_a_family_whose_op_launches_another_familys_kernel_is_refused_on_a_cluster_too(
    tmp_path: Path,
) -> None:
    command = tune_command("--kernels", "matmul_tma", "--dask", "local:1", "-o", "r.pb")
    done = forked_python.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 1, done.stderr[-3000:]
    assert [line for line in done.stderr.splitlines() if line.startswith("tuned-kernels:")] == [
        "tuned-kernels: --kernels matmul_tma tuned nothing: on this machine its op launches matmul_kernel "
        "(family matmul) instead; tune --kernels matmul"
    ]
