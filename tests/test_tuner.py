"""aot/: the tuner never picks a wrong config, resumes without redoing keys, shards merge to one run."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tuned_kernels.aot import tune_run
from tuned_kernels.aot.corpus import Case
from tuned_kernels.aot.corpus_loader import load_corpus
from tuned_kernels.aot.heuristics import heuristic_seeds
from tuned_kernels.aot.progress import Eta, Progress, ProgressEvent, bar_line
from tuned_kernels.aot.tune_report import TuneOptions
from tuned_kernels.aot.tuner import Tuner
from tuned_kernels.aot.work import EVERY_ITEM, Claims, work_items
from tuned_kernels.hardware import target_for_arch

from tests import forked_python
from tuned_kernels import model
from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.results import read_results
from tuned_kernels.results.merge import merge_entries
from tuned_kernels.search import decided, neighbours, paired, retimed, seeded, winner

PLANTED = str(Path(__file__).parent / "corpora" / "planted.py")


def tune(
    tmp_path: Path,
    shard: tuple[int, int] = (0, 1),
    items_limit: int | None = None,
    done: dict[model.EntrySlot, model.Entry] | None = None,
    on_progress: Callable[[ProgressEvent], None] = lambda _: None,
    claims: Claims = EVERY_ITEM,
) -> tuple[dict[model.EntrySlot, model.Entry], int]:
    corpus = load_corpus(PLANTED)
    calls = {"n": 0}

    def bench(fn: object) -> float:
        calls["n"] += 1
        kernel = corpus[0].kernel
        config = kernel.configs[0]  # forced: the one config being measured
        return 0.5 if config.kwargs["BUG"] else 10.0 / config.kwargs["BLOCK"] + config.num_warps

    tuner = Tuner(target_for_arch("cpu"), "cpu", bench, TuneOptions(shard=shard), on_progress=on_progress)
    items = work_items(corpus, "quick", shard)[:items_limit]
    held = dict(done or {})
    tune_run.tune(tuner, items, held, lambda _: None, claims)
    return held, calls["n"]


def test_planted_wrong_config_is_rejected_with_its_reason_never_chosen(tmp_path: Path) -> None:
    entries, _ = tune(tmp_path)
    assert len(entries) == 4
    for entry in entries.values():
        assert dict(entry.best.kwargs) == {"BLOCK": 64, "BUG": 0} and entry.best.num_warps == 1
        (rejection,) = entry.rejected
        assert dict(rejection.config.kwargs)["BUG"] == 1
        assert rejection.reason.startswith("wrong numbers:")


def test_resume_skips_finished_keys_and_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    full, full_calls = tune(tmp_path)
    half, _ = tune(tmp_path, items_limit=2)  # an interrupted run
    resumed, resumed_calls = tune(tmp_path, done=half)
    assert resumed == full
    assert resumed_calls == full_calls // 2  # only the two unfinished keys were benchmarked


def test_resume_makes_no_inputs_for_finished_keys(tmp_path: Path) -> None:
    finished, _ = tune(tmp_path)
    family = load_corpus(PLANTED)[0]
    devices: list[str] = []

    def make_inputs(case: Case, device: object, gen: object) -> dict[str, object]:
        devices.append(str(device))
        return family.make_inputs(case, device, gen)

    counting = dataclasses.replace(family, make_inputs=make_inputs)
    tuner = Tuner(target_for_arch("cpu"), "cpu", lambda fn: 1.0, TuneOptions())
    report = tune_run.tune(tuner, work_items([counting], "quick", (0, 1)), dict(finished), lambda _: None)
    assert report.resumed == 4 and report.tuned == 0
    assert devices == ["meta"] * 4  # keys probed on torch's meta device: no data made


def test_two_shards_merged_equal_one_unsharded_run(tmp_path: Path) -> None:
    full, _ = tune(tmp_path)
    a, _ = tune(tmp_path, shard=(0, 2))
    b, _ = tune(tmp_path, shard=(1, 2))
    assert a.keys().isdisjoint(b.keys())
    assert merge_entries([a.values(), b.values()]) == merge_entries([full.values()])


def test_progress_reports_each_config_the_best_so_far_and_each_finished_key(tmp_path: Path) -> None:
    events: list[ProgressEvent] = []
    entries, _ = tune(tmp_path, items_limit=2, on_progress=events.append)
    first_key = [e for e in events if e.index == 1]
    assert [e.configs_done for e in first_key if e.summary is None] == list(
        range(first_key[0].configs_total + 1)
    )
    finished = [e for e in events if e.summary is not None]
    assert [e.index for e in finished] == [1, 2]
    last_config = first_key[-2]  # the planted benchmarker times both keys alike
    assert {e.best_time_ms for e in entries.values()} == {last_config.best_ms}
    assert {e.best.describe() for e in entries.values()} == {last_config.best}

    log = io.StringIO()  # not a terminal: one plain line per finished key, no bar
    for event in events:
        Progress(log)(event)
    lines = log.getvalue().splitlines()
    assert (
        len(lines) == 2
        and lines[0].startswith("[1/2] double n=100: best BLOCK=64 BUG=0")
        and "rejected" in lines[0]
    )
    assert lines[-1].endswith("ETA 0s")


def test_the_progress_bar_fits_80_columns_counts_and_eta_first() -> None:
    key = "M=4096,N=14336,K=4096,dtype=bfloat16,ACTIVATION=silu"
    best = "BLOCK_K=64 BLOCK_M=128 BLOCK_N=256 GROUP_M=8 warps=8 stages=3"
    event = ProgressEvent(3, 12, "matmul_bias_act", key, 20, 76, best, 0.0123, 9.0)
    line = bar_line(event, 80, 65.0)
    assert len(line) <= 79
    assert line.startswith("3/12 [#---------] 20/76 configs, ETA 1m05s matmul_bias_act M=4096")
    assert line.endswith("…")  # the key is shortened, the best config dropped
    assert bar_line(event, 200, 65.0).endswith("ACTIVATION=silu: best 0.0123 ms")


def test_the_eta_comes_from_the_measured_rate_not_the_start_up() -> None:
    """Start-up took 20 s before the first config was measured; then each config takes 0.5 s."""
    eta = Eta()

    def at(index: int, done: int, elapsed: float, summary: str | None = None) -> float | None:
        return eta(ProgressEvent(index, 4, "k", "n=1", done, 10, None, None, elapsed, summary))

    assert at(1, 0, 0.0) is None
    assert at(1, 1, 20.0) is None  # one measurement: no rate yet
    assert at(1, 3, 21.0) == pytest.approx(0.5 * (7 + 3 * 10))
    assert at(1, 10, 24.5, "tuned") == pytest.approx(0.5 * 3 * 10)
    assert at(4, 10, 39.5, "tuned") == 0.0


def test_cases_whose_op_launches_another_familys_kernel_here_are_counted_not_tuned() -> None:
    from tuned_kernels.aot.kernels.builtin import CORPUS

    families = [f for f in CORPUS if f.name in ("matmul", "matmul_tma")]  # the same cases, M > 64
    items = work_items(families, "quick", (0, 1))
    events: list[ProgressEvent] = []
    tuner = Tuner(target_for_arch("cpu"), "cpu", lambda fn: 1.0, TuneOptions(), on_progress=events.append)
    done: dict[model.EntrySlot, model.Entry] = {}
    report = tune_run.tune(tuner, items, done, lambda _: None)
    # no copy engine on the cpu target: triton_matmul runs the tile kernel, the other family has no key
    assert (report.tuned, report.other_kernel, report.per_family) == (1, 1, {"matmul": 1})
    assert [e.summary for e in events if e.family == "matmul_tma" and e.summary] == [
        "its op launches another family's kernel here, skipped"
    ]


def test_families_sharing_one_ops_cases_run_each_case_once() -> None:
    from tuned_kernels.aot.corpus import distinct_runs
    from tuned_kernels.aot.kernels.builtin import CORPUS

    families = [f for f in CORPUS if f.name in ("matmul", "matmul_tma", "matmul_bias_act")]
    runs = [(family.name, case.id) for family, case in distinct_runs(families, "quick")]
    assert runs == [
        ("matmul", "M=96,N=80,K=64,dtype=float16"),  # matmul_tma's same case is not run again
        ("matmul_bias_act", "M=16,N=64,K=256,dtype=float16,act=gelu"),
    ]


def test_seeded_search_walks_neighbours_from_its_seeds() -> None:
    space = [model.Config.of({"B": b}, num_warps=w) for b in (16, 32, 64, 128) for w in (1, 2, 4)]
    best = model.Config.of({"B": 128}, num_warps=1)
    cost = {c: abs(dict(c.kwargs)["B"] - 128) + c.num_warps for c in space}
    measured = seeded(space, [model.Config.of({"B": 32}, num_warps=2)], lambda c: float(cost[c]))
    assert min(measured, key=lambda c: measured[c] or 1e9) == best
    assert len(measured) < len(space)
    assert set(neighbours(model.Config.of({"B": 32}, num_warps=2), space)) == {
        model.Config.of({"B": 16}, num_warps=2),
        model.Config.of({"B": 64}, num_warps=2),
        model.Config.of({"B": 32}, num_warps=1),
        model.Config.of({"B": 32}, num_warps=4),
    }


def test_configs_within_timing_noise_of_the_fastest_keep_the_kernels_first_so_runs_agree() -> None:
    """Two runs (two cards) timing the same near-equal configs with noise keep the same one, the first of
    the kernel's list among those within 1 %; a config clearly faster wins wherever it is listed."""
    space = [model.Config.of({"B": b}, num_warps=4) for b in (16, 32, 64, 128)]
    true_ms = {space[0]: 2.0, space[1]: 1.004, space[2]: 1.0, space[3]: 1.003}
    runs = [{c: t * (1 + noise) for c, t in true_ms.items()} for noise in (0.0, 0.003, -0.003)]
    runs.append({c: t * (1.003 if c == space[2] else 0.998) for c, t in true_ms.items()})  # order flipped
    assert {winner(run, space) for run in runs} == {space[1]}
    assert winner({**true_ms, space[3]: 0.97}, space) == space[3]  # 3 % faster: not noise
    assert winner({space[0]: None, space[1]: None}, space) is None  # every config rejected


def test_configs_close_to_the_fastest_are_timed_again_in_turn_and_a_slow_window_does_not_pick_the_winner() -> (
    None
):
    """A config whose one timing window ran slow (the card's clock) loses to a slower one on a single
    timing; the configs within 4 % of the fastest are timed twice more, in turn (the order reversed in the
    second round), so the faster config wins. Configs further away, or a key where only one is close, are not
    timed again."""
    space = [model.Config.of({"B": b}, num_warps=4) for b in (16, 32, 64, 128)]
    first = {space[0]: 1.03, space[1]: 1.0, space[2]: 1.5, space[3]: None}  # space[0] really 0.97
    true_ms = {space[0]: 0.97, space[1]: 1.0, space[2]: 1.5}
    timed_again: list[model.Config] = []

    def again(config: model.Config) -> float:
        timed_again.append(config)
        return true_ms[config]

    times, best = decided(first, space, again)
    assert timed_again == [space[1], space[0], space[0], space[1]]  # fastest first, then the other way
    assert winner(first, space) == space[1] and best == space[0]
    assert times[space[2]] == 1.5 and times[space[3]] is None
    close = {space[0]: 1.0, space[1]: 1.2}
    assert retimed(close, again) == (close, [])  # nothing close: nothing timed again
    assert retimed(first, lambda c: None) == (first, [])  # none ran again: each keeps its first time
    assert retimed(first, lambda c: math.inf) == (first, [])  # nor does a time that is no time
    assert retimed(first, again, rounds=0) == (first, [])  # the CPU target: no windows to time again

    def fails(config: model.Config) -> float:
        raise RuntimeError("out of resources")

    assert retimed(first, fails)[0] == first


def test_finalists_are_weighed_beside_the_leader_in_each_round_not_by_a_window_that_ran_fast_by_chance() -> (
    None
):
    """The first pass's fastest ran fast by chance (0.95 ms, really 1.0); the card's clock then runs 10 %
    slow for a whole round. Weighed by each round's times beside the leader, the config really 2 % faster
    wins, its time the leader's median window times its median ratio to it; the least window of each would
    keep the lucky one."""
    space = [model.Config.of({"B": b}, num_warps=4) for b in (16, 32)]
    first = {space[0]: 0.97, space[1]: 0.95}
    clock = iter([1.0, 1.0, 1.1, 1.1])  # round 1 at speed, round 2 slow: one factor per window
    true_ms = {space[0]: 0.98, space[1]: 1.0}

    times, best = decided(first, space, lambda c: true_ms[c] * next(clock))
    assert best == space[0]
    assert times[space[1]] == pytest.approx(1.05) and times[space[0]] == pytest.approx(1.05 * 0.98)
    times, weighed = retimed(first, lambda c: None if c == space[1] else true_ms[c])
    assert weighed == [space[0]] and times == {space[0]: 0.98, space[1]: None}  # failed again: left out
    assert paired(space, [{space[0]: 2.0}, {}]) == {space[0]: 2.0}  # the leader is the one timed again


@pytest.mark.parametrize("windows", [True, False])
def test_a_tune_times_its_closest_configs_again_where_its_timer_has_windows(windows: bool) -> None:
    """A device's timer (timing windows): the config whose first window ran slow is timed again with its
    close rival and wins; a wall clock's timer (the CPU target) times each config once."""
    corpus = load_corpus(PLANTED)
    kernel = corpus[0].kernel
    timings: dict[tuple[int, int], int] = {}

    def bench(fn: object) -> float:
        config = kernel.configs[0]  # forced: the one config being measured
        block = (config.kwargs["BLOCK"], config.num_warps)
        timings[block] = timings.get(block, 0) + 1
        if block == (32, 1):  # really the fastest; its first window ran 5 % slow
            return 1.03 if timings[block] == 1 else 0.98
        return 1.0 if block == (64, 1) else 2.0

    bench.windowed = windows  # type: ignore[attr-defined]
    tuner = Tuner(target_for_arch("cpu"), "cpu", bench, TuneOptions())
    held: dict[model.EntrySlot, model.Entry] = {}
    tune_run.tune(tuner, work_items(corpus, "quick", (0, 1))[:1], held, lambda _: None, EVERY_ITEM)
    (entry,) = held.values()
    assert dict(entry.best.kwargs)["BLOCK"] == (32 if windows else 64)
    assert timings[(32, 1)] == (3 if windows else 1) and timings[(16, 2)] == 1


def test_the_winner_is_one_of_the_configs_timed_again_each_weighed_against_configs_timed_as_often() -> None:
    """Five configs within 4 % of the fastest: the three fastest, and every one within 1 % (any may be kept:
    the kernel's first of those within 1 % is), are timed again; the fifth, 3 % slower and timed once, is
    not weighed against their least of three windows. Equal configs keep the kernel's first."""
    space = [model.Config.of({"B": b}, num_warps=4) for b in (16, 32, 64, 128, 256)]
    first = {space[0]: 1.004, space[1]: 1.003, space[2]: 1.002, space[3]: 1.000, space[4]: 1.03}
    times, best = decided(first, space, lambda c: 0.99)
    assert [c for c in space if times[c] == 0.99] == space[:4]
    assert best == space[0]  # as a run timing them once each would keep
    assert decided({**first, space[4]: 0.995}, space, lambda c: 0.99)[1] == space[0]


def test_compile_threads_by_default_share_the_hosts_cpus_among_the_gpus_tuning_on_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four GPUs' processes with a thread per core each would hold 4 threads per core: each then waits to
    launch and time its kernels, and its GPU idles. --jobs given is kept."""
    import os

    from tuned_kernels.aot.tune_report import shared_jobs

    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert [shared_jobs(TuneOptions(jobs=0), n).jobs for n in (1, 2, 4, 128)] == [64, 32, 16, 1]
    assert shared_jobs(TuneOptions(jobs=8), 4).jobs == 8


def test_matmul_seeds_follow_the_shape_and_the_chip() -> None:
    from tuned_kernels.kernels.matmul import matmul_configs
    from tuned_kernels.triton_edge.keys import config_from_triton

    space = [config_from_triton(c) for c in matmul_configs()]

    def tile(c: model.Config) -> tuple[object, ...]:
        return dict(c.kwargs)["BLOCK_M"], dict(c.kwargs)["BLOCK_N"], c.num_warps, c.num_stages

    prefill = Case.of(M=4096, N=4096, K=4096, dtype="float16")
    decode = Case.of(M=16, N=4096, K=4096, dtype="float16")
    assert tile(heuristic_seeds(target_for_arch("sm90"), "matmul", prefill, space)[0]) == (128, 256, 8, 3)
    assert tile(heuristic_seeds(target_for_arch("sm80"), "matmul", prefill, space)[0]) == (128, 128, 8, 3)
    assert all(tile(c)[0] == 32 for c in heuristic_seeds(target_for_arch("sm90"), "matmul", decode, space))
    assert heuristic_seeds(target_for_arch("sm90"), "attention", prefill, space) == []


@pytest.mark.parametrize(("n", "split"), [(4096, 4), (14336, 1), (28672, 1)])
def test_split_k_seeds_split_narrow_products_until_every_sm_has_work(n: int, split: int) -> None:
    from tuned_kernels.kernels.skinny_matmul import prune_skinny, skinny_configs
    from tuned_kernels.triton_edge.keys import config_from_triton

    case = Case.of(M=1, N=n, K=4096, dtype="float16")
    space = [config_from_triton(c) for c in prune_skinny(skinny_configs(), {"M": 1, "N": n, "K": 4096})]
    seeds = heuristic_seeds(target_for_arch("sm90"), "matmul_skinny", case, space)
    first = dict(seeds[0].kwargs)
    assert (first["SPLIT_K"], first["BLOCK_N"], first["BLOCK_K"]) == (split, 64, 128)


@pytest.fixture(scope="module")
def tuned_planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """`tune --corpus planted.py -o r.textproto --json` in a folder of its own: the file, and the run."""
    folder = tmp_path_factory.mktemp("tuned")
    run = forked_python.run(
        [sys.executable, "-m", "tuned_kernels", "tune", "--corpus", PLANTED, "-o", "r.textproto", "--json"],
        capture_output=True, text=True, cwd=folder, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return folder / "r.textproto", run


def test_tune_command_writes_a_results_file_inspect_can_read(
    tuned_planted: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    results = read_results(tuned_planted[0])
    assert results.header.producer is model.Producer.TUNE and len(results.entries) == 4
    assert all(e.rejected for e in results.entries)


@pytest.mark.parametrize("spec", ["nonexistent.py", "no.such.module:CORPUS", f"{PLANTED}:MISSING"])
def test_bad_corpus_spec_is_one_clear_error(spec: str) -> None:
    from tuned_kernels.errors import CorpusError

    with pytest.raises(CorpusError, match="corpus"):
        load_corpus(spec)


def test_a_corpus_that_exits_while_imported_is_one_line_not_a_silent_exit(tmp_path: Path) -> None:
    """A corpus file whose import calls sys.exit(3) (a script's main run at import): tune says so in one
    line and fails, instead of exiting 3 with no word."""
    corpus = tmp_path / "exits_corpus.py"
    corpus.write_text("import sys\nsys.exit(3)\n")
    run = forked_python.run(
        [
            sys.executable,
            "-m",
            "tuned_kernels",
            "tune",
            "--corpus",
            str(corpus),
            "-o",
            str(tmp_path / "r.pb"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert run.returncode != 3 and run.returncode != 0
    assert "Traceback" not in run.stderr
    assert "importing it exited (status 3)" in run.stderr, run.stderr


CAPTURED_PROGRAM = """
import torch, triton, triton.language as tl

@triton.autotune(configs=[triton.Config({"B": 16}), triton.Config({"B": 64})], key=["n"])
@triton.jit
def add_one(x_ptr, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

for n in (50, 500):
    x = torch.zeros(n)
    add_one[lambda m: (triton.cdiv(n, m["B"]),)](x, n)
print("ok")
"""


def test_capture_records_a_programs_own_autotuned_kernel(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(CAPTURED_PROGRAM)
    out = tmp_path / "captured.pb.zst"
    run = forked_python.run(
        [sys.executable, "-m", "tuned_kernels", "capture", "-o", str(out), "--", sys.executable, str(app)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert run.returncode == 0 and "ok" in run.stdout, run.stderr
    results = read_results(out)
    assert results.header.producer is model.Producer.CAPTURE
    assert sorted(e.key for e in results.entries) == [(50, "torch.float32"), (500, "torch.float32")]
    assert {e.kernel.name.rsplit(".", 1)[-1] for e in results.entries} == {"add_one"}
    assert all(e.found_by is model.FoundBy.CAPTURED and len(e.timings) == 2 for e in results.entries)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "app.py",
        "captured.pb.zst",
    ]  # no lock, no work file


def test_keys_another_process_claimed_are_left_to_it(tmp_path: Path) -> None:
    from tuned_kernels.aot.tune_command import ClaimFolder

    claims = tmp_path / "claims"
    claims.mkdir()
    (claims / "1").touch()  # another GPU's process reached item 1 first
    entries, _ = tune(tmp_path, claims=ClaimFolder(claims))
    assert sorted(e.key[0] for e in entries.values()) == [100, 1000, 3000]
    assert sorted(p.name for p in claims.iterdir()) == ["0", "1", "2", "3"]
    again, calls = tune(tmp_path, claims=ClaimFolder(claims))  # a latecomer finds every item taken
    assert again == {} and calls == 0


@pytest.mark.parametrize("participants", [2, 4, 8])
def test_participants_share_every_key_once_and_the_report_adds_up_all_of_them(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], participants: int
) -> None:
    """The multi-GPU path, run here on the cpu target: this process and a worker per other "GPU" claim the
    keys as they reach them; the merged file has each key once, and the merged report counts every
    participant's work, not only this process's."""
    from tuned_kernels.aot.tune_command import _run_workers
    from tuned_kernels.aot.tune_request import TuneRequest

    out = tmp_path / "r.pb"
    request = TuneRequest(output=str(out), corpus=PLANTED, options=TuneOptions(jobs=1))
    report = _run_workers(request, participants, target_for_arch("cpu"), "2026-11-22T00:00:00Z")
    entries = read_results(out).entries
    assert sorted(e.key[0] for e in entries) == [100, 300, 1000, 3000]
    assert report.failed == [] and report.tuned == 4 and report.per_family == {"double": 4}
    assert report.configs_benchmarked == sum(e.configs_benchmarked for e in entries) > 0
    assert report.benchmark_seconds > 0
    assert capfd.readouterr().out == ""  # the workers' summaries went to stderr
    gpus = {t.gpu: t for t in report.gpus}  # each participant's time, named by the GPU it was given
    assert set(gpus) == {f"GPU {i}" for i in range(participants)}
    assert sum(t.keys for t in gpus.values()) == 4
    assert all(t.measuring > 0 for t in gpus.values() if t.keys)


def test_merged_report_adds_up_participants() -> None:
    from tuned_kernels.aot.tune_report import TuneReport, merge_reports

    one = TuneReport(
        cases=4, tuned=3, configs_benchmarked=21, compile_seconds=1.0, artifacts=3, artifact_bytes=30
    )
    two = TuneReport(
        cases=4, tuned=1, configs_benchmarked=7, compile_seconds=0.5, artifacts=1, artifact_bytes=10
    )
    merged = merge_reports([one, two], seconds=2.0)
    assert (merged.tuned, merged.configs_benchmarked, merged.compile_seconds) == (4, 28, 1.5)
    assert merged.artifact_note == "4 compiled kernels kept, 40 bytes" and merged.seconds == 2.0


def test_the_report_counts_the_configs_timed_by_do_bench_because_no_graph_could_capture_them() -> None:
    """The GPU's benchmarker counts the calls it could not time from a CUDA graph (`fallbacks`); the report
    says how many configs each key's tuning timed so, added up over the participants."""
    from tuned_kernels.aot.tune_report import TuneReport, merge_reports

    class HalfFallingBack:  # every other call timed by do_bench, as DeviceBenchmarker(graphed=True) counts it
        def __init__(self) -> None:
            self.calls, self.fallbacks = 0, 0

        def __call__(self, fn: object) -> float:
            self.calls += 1
            self.fallbacks += self.calls % 2
            return 1.0

    timer = HalfFallingBack()
    tuner = Tuner(target_for_arch("cpu"), "cpu", timer, TuneOptions())
    report = tune_run.tune(tuner, work_items(load_corpus(PLANTED), "quick", (0, 1)), {}, lambda _: None)
    assert timer.calls > 1  # every config the check passed was timed
    assert report.timed_by_do_bench == timer.fallbacks == (timer.calls + 1) // 2
    assert (
        merge_reports([report, TuneReport(timed_by_do_bench=2)], 1.0).timed_by_do_bench
        == report.timed_by_do_bench + 2
    )


def test_tune_says_where_each_gpus_time_went_adding_up_to_the_run(
    tuned_planted: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    report = json.loads(tuned_planted[1].stdout)
    [split] = report["time_split"]
    assert (split["gpu"], split["keys"]) == ("cpu", 4)
    parts = ("startup", "probing", "compiling", "measuring", "waiting")
    assert sum(split[p] for p in parts) == pytest.approx(report["seconds"], abs=0.05)
    assert split["measuring"] > 0 and 0 < split["busy"] <= 1


def test_a_family_whose_op_launches_another_familys_kernel_here_is_refused_naming_that_family(
    tmp_path: Path,
) -> None:
    """On the cpu target the matmul op runs the tile kernel (`matmul`), never the copy-engine one: asked
    for `matmul_tma` alone, tune tunes nothing and says which family to ask for (on a Hopper GPU the
    other way round)."""
    from tuned_kernels.aot.tune_command import tuned_nothing
    from tuned_kernels.aot.tune_report import TuneReport
    from tuned_kernels.aot.tune_request import TuneRequest

    run = forked_python.run(
        [sys.executable, "-m", "tuned_kernels", "tune", "--kernels", "matmul_tma", "-o", "r.pb"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert run.returncode == 1
    said = [line for line in run.stderr.splitlines() if line.startswith("tuned-kernels:")]
    assert said == [
        "tuned-kernels: --kernels matmul_tma tuned nothing: on this machine its op launches matmul_kernel "
        "(family matmul) instead; tune --kernels matmul"
    ]
    asked = TuneRequest("both.pb", kernels=("matmul", "matmul_tma"))  # the op's other family asked for too
    report = TuneReport(per_family={"matmul": 1}, launched_instead={"matmul_tma": ["matmul_kernel"]})
    assert tuned_nothing(report, asked) == []


@pytest.mark.parametrize(
    ("families", "order"),
    [
        # (name, configs, cases): most configs first, then the largest case; choices last
        ([("small", 4, (1, 8)), ("big", 16, (2,))], ["big:2", "small:8", "small:1"]),
        ([("choice", 2, (9,)), ("k", 1, (1,))], ["k:1", "choice:9"]),
        ([("a", 3, (5,)), ("b", 3, (5,))], ["a:5", "b:5"]),  # ties keep the corpus's order
    ],
)
def test_keys_are_tuned_longest_first_and_implementation_choices_last(
    families: list[tuple[str, int, tuple[int, ...]]], order: list[str]
) -> None:
    from tuned_kernels.aot.corpus import KernelFamily
    from tuned_kernels.aot.kinds import longest_first

    from tuned_kernels.choice import ImplementationChoice

    class Kernel:
        def __init__(self, configs: int) -> None:
            self.configs = [object()] * configs

    def family(name: str, configs: int, sizes: tuple[int, ...]) -> KernelFamily:
        kernel = (
            ImplementationChoice(lambda x: None, {"x": lambda x: None, "y": lambda x: None}, key=["x"])
            if name == "choice"
            else Kernel(configs)
        )
        cases = [Case.of(n=n, dtype="float16") for n in sizes]
        return KernelFamily(name, kernel, lambda *_: {}, lambda _: None, lambda _: None, (0, 0), {"s": cases})

    items = work_items([family(*f) for f in families], "s", (0, 1))
    assert [f"{items[i].family.name}:{items[i].case['n']}" for i in longest_first(items)] == order


def test_a_keys_configs_are_measured_as_their_compiles_finish() -> None:
    from concurrent.futures import Future

    tuner = Tuner(target_for_arch("cpu"), "cpu", lambda fn: 1.0, TuneOptions())
    configs = [model.Config.of({"BLOCK": b}) for b in (16, 32, 64, 128)]
    compiling: dict[model.Config, Future[None]] = {c: Future() for c in configs[1:]}  # 16: not compiled here
    order = tuner.compiled_first(configs, compiling)
    assert next(order) == configs[0]
    compiling[configs[3]].set_result(None)
    assert next(order) == configs[3]  # the first to finish, not the first in the space
    compiling[configs[1]].set_result(None)
    compiling[configs[2]].set_result(None)
    assert list(order) == configs[1:3]


def test_cases_of_one_key_are_tuned_once_however_many_gpus_share_the_run(tmp_path: Path) -> None:
    """Cases that differ only outside the kernel's key (here a tag the op ignores) are one key: left out
    before the run is shared, so no two participants tune it."""
    from tuned_kernels.aot.tune_command import _run_workers
    from tuned_kernels.aot.tune_request import TuneRequest
    from tuned_kernels.aot.tuner import distinct_keys

    corpus = tmp_path / "tagged.py"
    corpus.write_text(
        "import dataclasses, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent / 'corpora')!r})\n"
        "from dask_corpus import CORPUS as DOUBLING\n"
        "from tuned_kernels.aot.corpus import Case\n"
        "CASES = [Case.of(n=n, tag=t) for n in (100, 300) for t in (1, 2, 3)]\n"
        "CORPUS = [dataclasses.replace(DOUBLING[0], shapes={'quick': CASES})]\n"
    )
    items = work_items(load_corpus(str(corpus)), "quick", (0, 1))
    assert distinct_keys(items) == [0, 3]  # n=100 and n=300, each once
    request = TuneRequest(output=str(tmp_path / "r.pb"), corpus=str(corpus), options=TuneOptions(jobs=1))
    report = _run_workers(request, 2, target_for_arch("cpu"), "2026-11-22T00:00:00Z")
    assert (report.tuned, report.same_key, report.resumed) == (2, 4, 0)
    assert sorted(e.key[0] for e in read_results(tmp_path / "r.pb").entries) == [100, 300]


def test_workers_started_before_the_order_end_quietly_when_the_run_cannot_start(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Workers start while the order is found; when the run fails before sharing its keys out (here its
    corpus fails to import), the failure is said once, by the run, and no worker adds its own."""
    from tuned_kernels.aot.tune_command import _run_workers
    from tuned_kernels.aot.tune_request import TuneRequest

    corpus = tmp_path / "broken.py"
    corpus.write_text("raise RuntimeError('corpus cannot load here')\n")
    request = TuneRequest(output=str(tmp_path / "r.pb"), corpus=str(corpus), options=TuneOptions(jobs=1))
    with pytest.raises(TunedKernelsError, match="corpus cannot load here"):
        _run_workers(request, 3, target_for_arch("cpu"), "2026-11-22T00:00:00Z")
    captured = capfd.readouterr()
    assert "corpus cannot load here" not in captured.out + captured.err
    assert not (tmp_path / "r.pb").exists()


def test_workers_started_before_torch_is_imported_join_the_run(tmp_path: Path) -> None:
    """`tune` starts its workers before it imports torch where the GPUs can be counted without it: the run
    takes them as they are and every key is tuned once."""
    from tuned_kernels.aot.tune_command import _run_workers
    from tuned_kernels.aot.tune_request import TuneRequest
    from tuned_kernels.aot.workers import Workers

    out = tmp_path / "r.pb"
    request = TuneRequest(output=str(out), corpus=PLANTED, options=TuneOptions(jobs=1))
    early = Workers(request, 2)
    folder = early.claims.parent
    report = _run_workers(request, 2, target_for_arch("cpu"), "2026-11-22T00:00:00Z", early)
    assert sorted(e.key[0] for e in read_results(out).entries) == [100, 300, 1000, 3000]
    assert report.failed == [] and {t.gpu for t in report.gpus} == {"GPU 0", "GPU 1"}
    assert not folder.exists()  # the workers' folder goes with them


STARTS_BEFORE_TORCH = """
import sys
from tuned_kernels.aot import dask_tune, tune_report, workers
from tuned_kernels.cli import main

def early(request):
    print("TORCH", "torch" in sys.modules)
    return None

def on_dask(request, address, created_at, timeout_s):
    print("TORCH", "torch" in sys.modules)
    return tune_report.TuneReport(tuned=1)

workers.Workers.early = staticmethod(early)
dask_tune.run_on_dask = on_dask
main(["tune", "--corpus", sys.argv[1], "-o", sys.argv[2], *sys.argv[3:]])
"""


@pytest.mark.parametrize("how", [(), ("--dask", "local")], ids=["own-workers", "dask-local"])
def test_tune_starts_its_workers_or_its_dask_cluster_before_it_imports_torch(
    tmp_path: Path, how: tuple[str, ...]
) -> None:
    """The workers (or a local Dask cluster's) import torch beside the starting process: nothing before
    them imports it there, even where the interpreter rule must ask torch whether a GPU is here."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TUNED_KERNELS_TARGET")}
    done = subprocess.run(  # a new interpreter: what it imported first is the claim
        [sys.executable, "-c", STARTS_BEFORE_TORCH, PLANTED, str(tmp_path / "r.pb"), *how],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[0] == "TORCH False", done.stdout[-2000:]


def test_workers_started_for_more_gpus_than_torch_counts_end_quietly_and_the_run_goes_on(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from tuned_kernels.aot.tune_command import run_tune
    from tuned_kernels.aot.tune_request import TuneRequest
    from tuned_kernels.aot.workers import Workers

    out = tmp_path / "r.pb"
    request = TuneRequest(output=str(out), corpus=PLANTED, options=TuneOptions(jobs=1))
    early = Workers(request, 3)  # the driver listed 3; torch (here: no GPU) counts otherwise
    report = run_tune(request, "2026-11-22T00:00:00Z", early)
    assert report.failed == [] and report.tuned == 4
    assert all(p.returncode is not None for p in early.procs) and not early.claims.parent.exists()
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize(
    ("visible", "listed", "count"),
    [
        (None, ["0000:18:00.0", "0000:2a:00.0"], 2),
        ("1", ["a", "b"], 1),
        ("1,0", ["a", "b"], 2),
        ("0,2,1", ["a", "b"], 1),  # CUDA stops at the first index that names no GPU
        ("", ["a", "b"], 0),
        ("-1", ["a", "b"], 0),
        ("GPU-5c2b7d0e", ["a", "b"], None),  # a UUID: not told without the driver's API
        (None, [], None),  # no driver list (an AMD GPU, another OS)
    ],
)
def test_the_gpus_cuda_will_show_are_counted_without_torch(
    visible: str | None, listed: list[str], count: int | None
) -> None:
    from tuned_kernels.aot.workers import visible_gpus

    environ = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    assert visible_gpus(environ, listed) == count
