"""A key no bundle tuned is served at once, a config predicted from what the bundles timed at the nearest
tuned keys, among those the kernel's own pruning keeps for it; the prediction is kept, untimed, and tuned
later on request (`tune-misses`)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest
import torch

from tests import factories, forked_python
from tuned_kernels import model
from tuned_kernels.nearest import nearest_key
from tuned_kernels.prediction import Tiling, predict
from tuned_kernels.results import read_results

PRUNED = str(Path(__file__).parent / "corpora" / "pruned.py")
F32 = "torch.float32"  # add_one's key: n and its two pointers' dtypes


def tuned_at(
    n: int, times: dict[int, float], failed: tuple[int, ...] = (), dtype: str = "fp32"
) -> model.Entry:
    """An entry for key (n, dtype) that timed each block in `times` (ms) and rejected those in `failed`."""
    ranked = sorted(times, key=times.__getitem__)
    return dataclasses.replace(
        factories.entry(key=(n, dtype), block=ranked[0] if ranked else 64, runner_up=None),
        timings=tuple(model.Timing(factories.config(b), times[b]) for b in ranked),
        rejected=tuple(model.Rejection(factories.config(b), "failed: out of resources") for b in failed),
    )


def tuned(*entries: model.Entry) -> dict[model.TuningKey, tuple[model.Entry, str]]:
    return {e.key: (e, "bundle.pb.zst") for e in entries}


BLOCKS = [factories.config(b) for b in (16, 32, 64, 128)]


def predicted_block(key: model.TuningKey, held: dict, allowed: list[model.Config] = BLOCKS) -> int | None:
    guess = predict(key, held, allowed)
    return None if guess is None else int(dict(guess.config.kwargs)["BLOCK"])  # type: ignore[arg-type]


class TestPredict:
    def test_the_config_slowest_to_lose_over_the_nearest_keys_is_predicted(self) -> None:
        held = tuned(
            tuned_at(1024, {64: 1.0, 32: 1.05, 128: 1.6, 16: 2.0}),
            tuned_at(4096, {128: 1.0, 64: 1.1, 32: 1.5, 16: 3.0}),
        )
        # between the two: 64 loses 5 % at worst, 128 loses 60 % at 1024
        assert predicted_block((2048, "fp32"), held) == 64

    def test_a_config_the_kernels_pruning_drops_for_this_key_is_never_predicted(self) -> None:
        held = tuned(tuned_at(1024, {64: 1.0, 32: 1.2, 16: 2.0}), tuned_at(4096, {64: 1.0, 32: 1.3, 16: 2.5}))
        assert predicted_block((2048, "fp32"), held, [factories.config(16), factories.config(32)]) == 32

    def test_a_config_that_failed_at_a_neighbour_is_never_predicted(self) -> None:
        held = tuned(tuned_at(1024, {64: 1.0, 32: 1.1}), tuned_at(4096, {32: 1.2}, failed=(64,)))
        assert predicted_block((2048, "fp32"), held) == 32

    def test_nearer_tuned_keys_weigh_more(self) -> None:
        held = tuned(tuned_at(1024, {32: 1.0, 128: 1.3}), tuned_at(1 << 20, {128: 1.0, 32: 1.3}))
        assert predicted_block((1100, "fp32"), held) == 32
        assert predicted_block((1 << 19, "fp32"), held) == 128

    def test_a_tuned_key_triton_specializes_as_the_unseen_one_weighs_more_than_one_as_near_in_size(
        self,
    ) -> None:
        """Triton compiles an integer argument divisible by 16 otherwise than one that is not: 1000 takes
        after 900 (neither divisible) rather than 1024, nearer in size."""
        held = tuned(tuned_at(1024, {64: 1.0, 16: 1.3}), tuned_at(900, {16: 1.0, 64: 1.3}))
        assert nearest_key((1000, "fp32"), held) == (900, "fp32")
        assert predicted_block((1000, "fp32"), held) == 16
        assert predicted_block((1040, "fp32"), held) == 64  # divisible by 16, as 1024

    def test_where_every_neighbour_is_specialized_otherwise_they_weigh_by_size_alone(self) -> None:
        held = tuned(tuned_at(1024, {64: 1.0, 16: 1.3}), tuned_at(512, {16: 1.0, 64: 2.0}))
        assert predicted_block((1008, "fp32"), held) == 64  # divisible by 16, as both
        assert predicted_block((1000, "fp32"), held) == predicted_block((1008, "fp32"), held)

    def test_keys_that_kept_no_timings_vote_for_their_winner_the_nearest_first(self) -> None:
        held = tuned(tuned_at(1024, {}), dataclasses.replace(tuned_at(8192, {}), best=factories.config(128)))
        assert predicted_block((1000, "fp32"), held) == 64
        assert predicted_block((9000, "fp32"), held) == 128

    def test_tuned_keys_that_timed_none_of_the_kernels_configs_predict_nothing(self) -> None:
        held = tuned(tuned_at(1024, {48: 1.0, 96: 1.2}), tuned_at(4096, {96: 1.0}))  # configs since changed
        assert predicted_block((2048, "fp32"), held) is None

    def test_no_comparable_tuned_key_predicts_nothing(self) -> None:
        held = tuned(tuned_at(1024, {64: 1.0}, dtype="fp16"))
        assert predicted_block((1024, "fp32"), held) is None
        assert predicted_block((1024, "fp32", 1), held) is None


def rows(block_m: int) -> model.Config:
    return model.Config.of({"BLOCK_M": block_m, "BLOCK_K": 64}, num_warps=4, num_stages=3)


def tiled_at(m: int, times: dict[int, float]) -> model.Entry:
    """An entry for key (m, 4096) that timed each row block in `times` (ms)."""
    ranked = sorted(times, key=times.__getitem__)
    return dataclasses.replace(
        factories.entry(key=(m, 4096)),
        best=rows(ranked[0]),
        timings=tuple(model.Timing(rows(b), times[b]) for b in ranked),
    )


class TestTiling:
    """On a GPU of 4 multiprocessors: 128-row tiles cover M = 512 in one wave of 4 programs, 640 in two
    waves and 1024 in two; 64-row tiles take two, three and four."""

    TILING = Tiling(("M", "K"), processors=4)
    HELD = tuned(tiled_at(512, {128: 1.0, 64: 1.2}), tiled_at(1024, {128: 2.0, 64: 2.3}))

    def test_a_neighbours_times_are_carried_to_the_unseen_key_by_the_waves_each_config_runs(self) -> None:
        # 128 rows win at both neighbours; at 640 they run 2 waves where 64 rows run 3
        without = predict((640, 4096), self.HELD, [rows(64), rows(128)])
        carried = predict((640, 4096), self.HELD, [rows(64), rows(128)], self.TILING)
        assert without is not None and carried is not None
        assert (without.config, carried.config) == (rows(128), rows(64))

    def test_where_both_run_the_same_waves_the_neighbours_winner_stays(self) -> None:
        guess = predict((1000, 4096), self.HELD, [rows(64), rows(128)], self.TILING)
        assert guess is not None and guess.config == rows(128)  # 2 waves and 4, as at 1024

    def test_a_wave_holds_as_many_programs_as_the_tuned_entry_says_a_multiprocessor_held(self) -> None:
        """Deeper pipelines take more shared memory: a multiprocessor that holds 3 programs of a config
        runs M = 640's 10 programs of 64 rows in one wave of 12, where one that holds 2 runs two waves."""
        assert (self.TILING.waves((640, 4096), rows(64), 3), self.TILING.waves((640, 4096), rows(64), 2)) == (
            1,
            2,
        )
        shallow, deep = rows(64), dataclasses.replace(rows(64), num_stages=4)
        held = tuned(dataclasses.replace(
            factories.entry(key=(512, 4096)),
            best=deep,
            timings=(model.Timing(deep, 1.0, resident=2), model.Timing(shallow, 1.15, resident=3)),
        ))  # fmt: skip
        # at 512 both run one wave (8 programs) and the deep one wins; at 640 it runs two, the shallow one
        assert predict((512, 4096), held, [shallow, deep], self.TILING).config == deep  # type: ignore[union-attr]
        assert predict((640, 4096), held, [shallow, deep], self.TILING).config == shallow  # type: ignore[union-attr]

    def test_a_neighbour_whose_configs_the_tiling_does_not_all_cover_is_carried_for_none(self) -> None:
        """Twice the waves for the tiled config alone would hand the key to the one no waves are known for."""
        other = factories.config(64)  # tiles by BLOCK, which names no key size
        held = tuned(
            dataclasses.replace(
                factories.entry(key=(512, 4096)),
                best=rows(64),
                timings=(model.Timing(rows(64), 1.0), model.Timing(other, 1.1)),
            )
        )
        guess = predict((1024, 4096), held, [rows(64), other], self.TILING)
        assert guess is not None and guess.config == rows(64)

    def test_a_reduction_an_untiled_size_or_an_unknown_gpu_gives_no_waves(self) -> None:
        assert self.TILING.waves((640, 4096), rows(64)) == 3
        assert Tiling(("M", "K"), 0).waves((640, 4096), rows(64)) is None  # no processor count
        assert Tiling(("N", "K"), 4).waves((640, 4096), rows(64)) is None  # no block of N; K not tiled
        assert Tiling(("N",), 4).waves((640,), factories.config(64)) is None  # BLOCK: not named for N


def test_the_registry_tiles_a_prediction_on_this_gpus_multiprocessors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tuned_kernels.registry import runtime
    from tuned_kernels.registry.loading import Loaded

    from tuned_kernels.decision import Decision

    tilings: list[Tiling | None] = []

    def decide(*args: object, **kwargs: object) -> Decision:
        tilings.append(kwargs.get("tiling", args[6] if len(args) > 6 else None))  # type: ignore[arg-type]
        return Decision("miss")

    monkeypatch.setattr(runtime, "decide", decide)
    registry = runtime.Registry()
    registry._loaded = Loaded(target=factories.H100)  # 132 multiprocessors
    asked = Tiling(("M", "K"), 0, persistent=True)
    registry.decide(factories.entry().kernel, (640, 4096), lambda _: True, counted=False, tiling=asked)
    assert tilings == [Tiling(("M", "K"), 132, persistent=True)]


def test_the_triton_edge_tells_the_resolver_how_its_kernel_tiles_its_key() -> None:
    """What a prediction tiles by: the autotuner's key arguments, in order, and whether it loops."""
    pruned = factories.script_module(Path(PRUNED))

    from tuned_kernels import resolving
    from tuned_kernels.decision import Decision
    from tuned_kernels.triton_edge import autotuner

    asked: list[Tiling | None] = []

    class Recording:
        def decide(self, *_: object, tiling: Tiling | None = None, **__: object) -> Decision:
            asked.append(tiling)
            return Decision("hit", (factories.config(16, warps=1),))

    x = torch.arange(64.0)
    with autotuner.patched(), resolving.installed(Recording()):  # type: ignore[arg-type]
        assert torch.equal(pruned.add_one(x, torch.empty_like(x)), x + 1)
    assert asked == [Tiling(("n",), 0, persistent=False)]


def test_a_key_argument_left_to_its_default_names_no_element_of_the_key() -> None:
    """Triton's key leaves out a key argument the launch does not pass: the names after it move up."""
    from types import SimpleNamespace

    from tuned_kernels.triton_edge.keys import key_names, tuning_key

    kernel = SimpleNamespace(arg_names=["a", "M", "N", "K"], keys=["M", "N", "K"])
    named = {"a": 0, "N": 4096, "K": 512}  # M defaulted
    assert (key_names(kernel, named), tuning_key(kernel, named)) == (["N", "K"], (4096, 512))


def test_a_kernel_that_loops_over_its_tiles_holds_one_program_per_multiprocessor_in_a_wave() -> None:
    """A grid-stride kernel launches a program per multiprocessor whatever the residency allows."""
    looping = Tiling(("M", "K"), processors=4, persistent=True)
    assert looping.waves((640, 4096), rows(64), resident=3) == 3  # 10 programs' tiles, 4 at a time


PROGRAM = """
import json, sys, torch
sys.path.insert(0, {corpora!r})
import tuned_kernels; tuned_kernels.enable()
from pruned import add_one, add_one_kernel
for n in {sizes!r}:
    x = torch.randn(n)
    assert torch.equal(add_one(x, torch.empty_like(x)), x + 1), "wrong result"
blocks = sorted({{c.kwargs["BLOCK"] for c in add_one_kernel.cache.values()}})
print("STATS " + json.dumps({{**tuned_kernels.stats(), "blocks": blocks}}))
"""


def run(tmp_path: Path, sizes: tuple[int, ...], bundle: Path, *, via: list[str] = (), **env: str) -> dict:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM.format(corpora=str(Path(PRUNED).parent), sizes=sizes))
    full_env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "TUNED_KERNELS": "1",
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "cache"),
        "TUNED_KERNELS_PATH": str(bundle),
        **env,
    }
    out = forked_python.run(
        [*via, sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=tmp_path,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout.split("STATS ", 1)[1])
    stats["stderr"] = out.stderr
    return stats


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """add_one tuned at n = 2048 and 4096 (where the pruning keeps every block)."""
    return factories.tuned_file(PRUNED, tmp_path_factory.mktemp("bundle") / "pruned.pb.zst")


def test_an_unseen_key_is_served_a_predicted_config_the_pruning_keeps_with_nothing_timed(
    tmp_path: Path, bundle: Path
) -> None:
    held = read_results(bundle)
    assert {e.key[0] for e in held.entries} == {2048, 4096}
    assert all(len(e.timings) == 8 for e in held.entries)  # every config's time: what predictions weigh
    stats = run(tmp_path, (40,), bundle)  # n=40: the pruning keeps BLOCK=16 alone
    assert (stats["hits"], stats["predicted"], stats["misses"], stats["configs_benchmarked"]) == (0, 1, 0, 0)
    assert stats["blocks"] == [16]
    stats = run(tmp_path, (3000,), bundle)  # between the tuned keys: every block kept
    assert (stats["predicted"], stats["configs_benchmarked"]) == (1, 0)
    assert stats["predicted_keys"] == [["pruned.add_one_kernel", ["3000", F32, F32]]]


def test_a_prediction_is_kept_untimed_served_again_and_tuned_by_tune_misses(
    tmp_path: Path, bundle: Path
) -> None:
    first = run(tmp_path, (40, 3000), bundle, TUNED_KERNELS_VERBOSE="1")
    assert (first["predicted"], first["configs_benchmarked"]) == (2, 0)
    assert (
        f"predicted, not in any bundle: pruned.add_one_kernel (40, {F32}, {F32}); pruned.add_one_kernel (3000, "
        in first["stderr"]
    )
    overlay = next((tmp_path / "cache").glob("overlay-*.pb"))
    kept = read_results(overlay).entries
    assert {(e.key[0], e.found_by) for e in kept} == {
        (40, model.FoundBy.PREDICTED),
        (3000, model.FoundBy.PREDICTED),
    }
    again = run(tmp_path, (40, 3000), bundle)
    assert (again["predicted"], again["configs_benchmarked"], again["served_from"]) == (
        2,
        0,
        {str(overlay): 2},
    )

    out = forked_python.run(
        [sys.executable, "-m", "tuned_kernels", "tune-misses", "-o", str(tmp_path / "misses.pb.zst"), "--json", "--",
         sys.executable, str(tmp_path / "prog.py")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "TRITON_INTERPRET": "1", "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "cache"),
             "TUNED_KERNELS_PATH": str(bundle)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    said = json.loads(out.stdout.splitlines()[-1])
    assert said["tuned"] == [
        ["pruned.add_one_kernel", [40, F32, F32]],
        ["pruned.add_one_kernel", [3000, F32, F32]],
    ]
    assert (said["overlays"], said["written"]) == ([str(overlay)], 2)
    assert {e.found_by for e in read_results(overlay).entries} == {model.FoundBy.ONLINE}
    assert {e.key[0] for e in read_results(tmp_path / "misses.pb.zst").entries} == {40, 3000}
    tuned = run(tmp_path, (40, 3000), bundle)
    assert (tuned["hits"], tuned["predicted"], tuned["configs_benchmarked"]) == (2, 0, 0)


def test_on_miss_tune_tunes_an_unseen_key_where_it_is_met(tmp_path: Path, bundle: Path) -> None:
    stats = run(tmp_path, (3000,), bundle, TUNED_KERNELS_ON_MISS="tune")
    assert (stats["predicted"], stats["misses"]) == (0, 1) and stats["configs_benchmarked"] == 8


def test_strict_stops_where_a_config_would_be_predicted(tmp_path: Path, bundle: Path) -> None:
    script = tmp_path / "prog.py"
    run(tmp_path, (2048,), bundle)  # writes the program; a hit passes
    env = {**os.environ, "TRITON_INTERPRET": "1", "TUNED_KERNELS": "1", "TUNED_KERNELS_STRICT": "1",
           "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "cache"), "TUNED_KERNELS_PATH": str(bundle)}  # fmt: skip
    script.write_text(script.read_text().replace("(2048,)", "(3000,)"))
    out = forked_python.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 3
    assert (
        f"pruned.add_one_kernel (3000, {F32}, {F32}) is not in the bundles; its config would be predicted"
        in out.stderr
    )


def test_each_committed_prediction_readout_is_what_this_prediction_makes_of_its_tuned_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """BENCHMARKS.md's prediction rows come from readouts made from committed tuned files (every config's
    time at every key) by benchmarks/predict_readout.py: a change to the prediction that moves any figure
    fails here until the readout is made again and the rows follow it."""
    benchmarks = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.setattr(sys, "path", list(sys.path))  # the script puts benchmarks/ first: not for later tests
    predict_readout = factories.script_module(benchmarks / "predict_readout.py")
    readouts = [
        (path, report)
        for path in sorted(benchmarks.glob("results-*-predict.json"))
        if "read_out" in (report := json.loads(path.read_text()))["predict"]
    ]
    assert readouts  # there is one to check
    for path, report in readouts:
        tuned = [benchmarks / name for name in report["predict"]["read_out"]["files"]]
        again = predict_readout.reread(tuned, report["environment"])
        assert again["predict"]["kernels"] == report["predict"]["kernels"], path.name
