"""The measuring engine of a miss (and of tune's compile-ahead): candidates compile on a bounded number of
threads, a config that fails is left for its timing to reject, and a brief first pass keeps only the few
configs that could win for the full timing."""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import threading
import types
from typing import Any

import pytest

from tuned_kernels.search import contenders
from tuned_kernels.triton_edge import measuring

INF = math.inf


@pytest.mark.parametrize(
    ("first_pass", "kept"),
    [
        ({"a": 1.0, "b": 1.05, "c": 1.2, "d": 3.0}, ["a", "b"]),  # within 10 % of the fastest
        ({"a": 1.0, "b": 2.0, "c": 3.0}, ["a", "b"]),  # at least two, so a full timing decides
        ({c: 1.0 + i / 100 for i, c in enumerate("abcdefg")}, list("abcde")),  # at most five, fastest first
        ({"a": INF, "b": 2.0, "c": 2.1, "d": INF}, ["b", "c"]),  # configs that failed never contend
        ({"a": INF, "b": 2.0}, ["b"]),
        ({"a": INF, "b": INF}, []),  # none ran: nothing to time in full
    ],
)
def test_a_full_timing_decides_between_the_configs_close_to_the_fastest(
    first_pass: dict[str, float], kept: list[str]
) -> None:
    assert contenders(first_pass) == kept


@pytest.mark.parametrize(
    ("setting", "cpus", "jobs"),
    [
        (None, 16, 16),  # the default: the CPU count, at most 16
        (None, 64, 16),
        (None, 2, 2),
        ("3", 16, 3),
        ("64", 16, 16),  # never more than the machine has
        ("0", 4, 4),  # not a width: the default
        ("-2", 4, 4),
        ("many", 4, 4),
    ],
)
def test_the_width_of_a_miss_is_the_setting_bounded_by_the_cpus(
    setting: str | None, cpus: int, jobs: int
) -> None:
    environ = {} if setting is None else {measuring.MISS_JOBS_ENV: setting}
    assert measuring.miss_jobs(environ, cpus) == jobs


class _FakeCompiler:
    """Stands for Triton's compile: records what compiled and how many compiled at once; "bad" fails.
    Two compiles must meet (a barrier) for either to finish, so a width of one never completes them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = self.most = 0
        self.done: list[str] = []
        self.meet = threading.Barrier(2, timeout=60)

    def warmup(self, autotuner: Any, named: Any, config: str) -> None:
        if config == "bad":
            raise RuntimeError("PTXASError: out of registers")
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.meet.wait()
        with self.lock:
            self.running -= 1
            self.done.append(config)


@pytest.fixture
def fake_compiler(monkeypatch: pytest.MonkeyPatch) -> _FakeCompiler:
    fake = _FakeCompiler()
    monkeypatch.setattr(measuring, "interpreting", lambda: False)
    monkeypatch.setattr(measuring, "is_compiled_kernel", lambda _: True)
    monkeypatch.setattr(measuring, "make_driver", lambda: True)  # a GPU driver, as on a GPU machine
    monkeypatch.setattr(measuring, "warmup", fake.warmup)
    return fake


CONFIGS: list[Any] = ["a", "b", "bad", "c", "d"]


def test_candidates_compile_side_by_side_within_the_width_and_a_failure_stops_none_of_the_others(
    fake_compiler: _FakeCompiler,
) -> None:
    measuring.compile_all(object(), {}, CONFIGS, jobs=2)
    assert sorted(fake_compiler.done) == ["a", "b", "c", "d"] and fake_compiler.most == 2


class _Loads:
    """Compiled kernels whose loading (`_init_handles`: launcher built, binary loaded) is recorded: the
    first waits a while for any other load to start beside it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loading = 0
        self.beside_first: list[int] = []  # whether another load started during the first
        self.loaded = 0
        self.another_started = threading.Event()

    def warmup(self, autotuner: Any, named: Any, config: str) -> Any:
        return types.SimpleNamespace(_init_handles=self.load)

    def load(self) -> None:
        with self.lock:
            first, self.loading = self.loaded == 0 and self.loading == 0, self.loading + 1
            if not first:
                self.another_started.set()
        if first:
            self.beside_first.append(int(self.another_started.wait(timeout=0.5)))
        with self.lock:
            self.loading -= 1
            self.loaded += 1


def test_the_first_candidate_loads_alone_so_its_launcher_is_built_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every config of a kernel has the same host launcher, a C build: the first config builds it while the
    others wait, then they load beside each other from Triton's cache."""
    loads = _Loads()
    monkeypatch.setattr(measuring, "interpreting", lambda: False)
    monkeypatch.setattr(measuring, "is_compiled_kernel", lambda _: True)
    monkeypatch.setattr(measuring, "make_driver", lambda: True)
    monkeypatch.setattr(measuring, "warmup", loads.warmup)
    measuring.compile_all(object(), {}, CONFIGS, jobs=4)
    assert loads.beside_first == [0] and loads.loaded == len(CONFIGS)


def test_triton_s_driver_is_made_once_by_the_missing_thread_before_any_compile_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Triton makes its driver at first use without a lock; compile threads meeting it at once would each
    make one and build its host utilities."""
    made: list[str] = []
    seen: list[list[str]] = []
    monkeypatch.setattr(measuring, "interpreting", lambda: False)
    monkeypatch.setattr(measuring, "is_compiled_kernel", lambda _: True)
    monkeypatch.setattr(
        measuring, "make_driver", lambda: made.append(threading.current_thread().name) or True
    )
    monkeypatch.setattr(measuring, "warmup", lambda *_: seen.append(list(made)))
    measuring.compile_all(object(), {}, CONFIGS, jobs=4)
    assert made == [threading.current_thread().name] and seen == [made] * len(CONFIGS)


def _compile_in_child(fake: _FakeCompiler, answer: Any) -> None:
    measuring.compile_all(object(), {}, CONFIGS, jobs=2)
    answer.put(sorted(fake.done))


def test_a_forked_child_compiles_a_miss_on_its_own_threads(fake_compiler: _FakeCompiler) -> None:
    """A DataLoader worker or a forked server process meets a miss: threads start there (no process pool)."""
    context = multiprocessing.get_context("fork")
    answer = context.SimpleQueue()
    child = context.Process(target=_compile_in_child, args=(fake_compiler, answer))
    child.start()
    child.join(timeout=120)
    assert child.exitcode == 0 and answer.get() == ["a", "b", "c", "d"]


def test_the_interpreter_compiles_nothing_ahead_and_is_timed_in_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(measuring, "interpreting", lambda: True)
    assert measuring.submit_compiles(None, object(), {}, CONFIGS) == []  # type: ignore[arg-type]
    assert not measuring.screens(object(), candidates=100)


@pytest.mark.parametrize(
    ("brief", "full_passes", "timings"),
    [
        ({"a": 1.0, "b": 1.05, "c": 3.0, "d": INF}, [["a", "b"]], {"a": 0.9, "b": 0.95, "d": INF}),
        ({"a": INF, "b": 2.0, "c": INF}, [], {"a": INF, "b": 2.0, "c": INF}),  # one ran: its brief time
        ({"a": INF, "b": INF, "c": INF}, [], {"a": INF, "b": INF, "c": INF}),  # none ran: no second pass
    ],
)
def test_a_miss_times_in_full_only_the_contenders_of_its_brief_pass(
    monkeypatch: pytest.MonkeyPatch, brief: dict[str, float], full_passes: list[list[str]], timings: dict
) -> None:
    """Triton's `benchmark` does not time a lone config (it returns 0 ms): a single survivor of the brief
    pass keeps its brief time rather than a 0 ms that would be recorded as its speed."""
    from tuned_kernels.triton_edge import autotuner

    passes: list[list[str]] = []

    def benchmark(_: Any, configs: list[str], kwargs: Any) -> tuple[str, dict[str, float]]:
        full = bool(passes)  # the first call is the brief pass; a full one reads a little faster
        passes.append(configs)
        return configs[0], {c: brief[c] - (0.1 if full else 0.0) for c in configs}

    monkeypatch.setattr(measuring, "screens", lambda *_: True)
    monkeypatch.setattr(measuring, "compile_all", lambda *_: None)
    monkeypatch.setattr(measuring, "timed_briefly", lambda _: contextlib.nullcontext())
    monkeypatch.setattr(autotuner, "benchmark", benchmark)
    space = {c: c for c in brief}
    got, screened = autotuner._timings(object(), space, list(brief), {}, {})  # type: ignore[arg-type]
    assert passes[1:] == full_passes and got == pytest.approx(timings)
    assert screened == len(brief) - len(timings)
