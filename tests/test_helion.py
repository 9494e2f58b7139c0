"""Helion kernels served through Helion's autotune cache: each case runs tests/helion_program.py (two Helion
kernels on the CPU through Triton's interpreter, searched by a small wall-clock search of its own, since
Helion's searches time on a GPU) as a real process. What the CPU cannot cover (Helion's own searches, compiled
kernels served with a config) the GPU tests do (test_gpu.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import factories, forked_python
from tuned_kernels import model
from tuned_kernels.helion_edge import keys
from tuned_kernels.results import read_results, write_results

pytest.importorskip("helion")  # a dev dependency: installed wherever the tests run

PROGRAM = Path(__file__).parent / "helion_program.py"
HELION_CORPUS = Path(__file__).parent / "corpora" / "helion_corpus.py"
ROOT = Path(__file__).parent.parent
KERNELS = ("helion.tests.helion_program.add", "helion.tests.helion_program.row_sum")


@dataclasses.dataclass(frozen=True)
class Run:
    report: dict[str, Any]
    warnings: list[str]


def run_program(tmp_path: Path, *args: str, capture: Path | None = None, **env: str) -> Run:
    """The program with TUNED_KERNELS=1 (or captured into `capture`), its overlay and Helion's cache in
    `tmp_path`, `env` added."""
    environ = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "HELION_AUTOTUNER": "WallClockSearch",
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay"),
        "HELION_CACHE_DIR": str(tmp_path / "helion"),
        "TUNED_KERNELS_PATH": "",
        **env,
    }
    command = [sys.executable, str(PROGRAM), *args]
    if capture is not None:
        command = [sys.executable, "-m", "tuned_kernels", "capture", "-o", str(capture), "--", *command]
    else:
        environ["TUNED_KERNELS"] = "1"
    out = forked_python.run(command, capture_output=True, text=True, env=environ, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    report = json.loads(next(line for line in out.stdout.splitlines() if line.startswith("{")))
    assert report["right"] == {"add": True, "row_sum": True}
    return Run(report, factories.warnings_in(out.stderr))


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run]:
    folder = tmp_path_factory.mktemp("capture")
    bundle = folder / "helion.pb.zst"
    return bundle, run_program(folder, capture=bundle)


def test_a_missed_helion_kernel_is_searched_once_then_served_from_the_overlay(tmp_path: Path) -> None:
    first = run_program(tmp_path)
    assert sorted(first.report["searches"]) == ["add", "row_sum"]
    assert first.report["stats"]["misses"] == 2 and first.report["stats"]["configs_benchmarked"] >= 2

    second = run_program(tmp_path)
    assert second.report["searches"] == []
    assert second.report["stats"]["hits"] == 2 and second.report["stats"]["misses"] == 0
    assert second.report["configs"] == first.report["configs"]
    assert first.warnings == second.warnings == []


def test_a_search_helion_forces_without_asking_its_cache_still_reaches_the_overlay(tmp_path: Path) -> None:
    """HELION_FORCE_AUTOTUNE=1 searches without reading any cache (ours included); the winner Helion hands
    its cache is kept all the same, so the next process is served."""
    forced = run_program(tmp_path, HELION_FORCE_AUTOTUNE="1")
    assert sorted(forced.report["searches"]) == ["add", "row_sum"] and forced.warnings == []

    served = run_program(tmp_path)
    assert served.report["searches"] == [] and served.report["stats"]["hits"] == 2
    assert served.report["configs"] == forced.report["configs"]


def test_a_captured_program_is_served_from_its_bundle_with_the_configs_helion_found(
    tmp_path: Path, captured: tuple[Path, Run]
) -> None:
    bundle, capture = captured
    results = read_results(bundle)
    assert sorted(e.kernel.name for e in results.entries) == sorted(KERNELS)
    assert all(e.key[:2] == keys.versions() for e in results.entries)

    served = run_program(tmp_path, TUNED_KERNELS_PATH=str(bundle))
    assert served.report["searches"] == []
    assert served.report["stats"]["hits"] == 2
    assert served.report["configs"] == capture.report["configs"]


def _tune(tmp_path: Path, *args: str, succeeds: bool = True) -> str:
    """`tuned-kernels tune` of tests/corpora/helion_corpus.py (the program's two kernels) on the cpu target."""
    corpus = [] if "--corpus" in args else ["--corpus", str(HELION_CORPUS)]
    command = [sys.executable, "-m", "tuned_kernels", "tune", *corpus, *args]
    environ = {**os.environ, "TRITON_INTERPRET": "1", "HELION_AUTOTUNER": "WallClockSearch",
               "HELION_CACHE_DIR": str(tmp_path / "helion-tune"), "TUNED_KERNELS_PATH": ""}  # fmt: skip
    out = forked_python.run(command, capture_output=True, text=True, env=environ, cwd=ROOT, timeout=300)
    assert (out.returncode == 0) == succeeds, out.stderr[-3000:]
    return out.stdout + out.stderr


def test_a_corpus_of_helion_kernels_is_tuned_by_helion_s_search_and_its_file_serves_the_program(
    tmp_path: Path,
) -> None:
    """`tune` runs each family's op: Helion searches with the program's settings (its own search here),
    the winner is checked against the family's reference and kept; the program then searches nothing."""
    tuned = tmp_path / "helion.pb"
    _tune(tmp_path, "-o", str(tuned))
    entries = read_results(tuned).entries
    assert sorted(e.kernel.name for e in entries) == sorted(KERNELS)
    assert all(e.key[:2] == keys.versions() and e.configs_benchmarked >= 1 for e in entries)
    assert all(e.found_by is model.FoundBy.CAPTURED for e in entries)

    served = run_program(tmp_path, TUNED_KERNELS_PATH=str(tuned))
    assert served.report["searches"] == [] and served.report["stats"]["hits"] == 2
    stored = {
        e.kernel.name.rsplit(".", 1)[-1]: json.loads(dict(e.best.kwargs)[keys.CONFIG_KWARG]) for e in entries
    }
    assert {name: {k: v for k, v in config.items() if k in stored[name]}
            for name, config in served.report["configs"].items()} == stored  # fmt: skip

    again = _tune(tmp_path, "-o", str(tuned), "--resume")
    assert "tuned 0 keys" in again and "Autotuning complete" not in again  # nothing searched again


def test_a_helion_winner_that_gives_wrong_numbers_is_not_kept_and_the_tune_says_why(tmp_path: Path) -> None:
    tuned = tmp_path / "wrong.pb"
    said = _tune(tmp_path, "--corpus", f"{HELION_CORPUS}:WRONG", "-o", str(tuned), succeeds=False)
    assert (
        "FAILED: helion_add_checked_as_sub" in said and "the config its search found: wrong numbers" in said
    )
    assert read_results(tuned).entries == ()


def _edit_config(edit: Callable[[dict[str, Any]], Any]) -> Callable[[model.Entry], model.Entry]:
    def edited(entry: model.Entry) -> model.Entry:
        values = json.loads(str(dict(entry.best.kwargs)[keys.CONFIG_KWARG]))
        text = edit(values)
        text = text if isinstance(text, str) else json.dumps(values)
        best = dataclasses.replace(entry.best, kwargs=((keys.CONFIG_KWARG, text),))
        return dataclasses.replace(entry, best=best, timings=())

    return edited


def _more_block_sizes(values: dict[str, Any]) -> None:
    values["block_sizes"] = [*values["block_sizes"], 16]


def _a_knob_helion_does_not_have(values: dict[str, Any]) -> None:
    values["rm_rf"] = True


def _warps_out_of_range(values: dict[str, Any]) -> None:
    values["num_warps"] = 4096


HOSTILE_CONFIGS = {
    "one block size too many": _edit_config(_more_block_sizes),
    "a knob Helion does not have": _edit_config(_a_knob_helion_does_not_have),
    "warps out of range": _edit_config(_warps_out_of_range),
    "not JSON": _edit_config(lambda _: "{block_sizes: [32"),
    "a Triton config": lambda e: dataclasses.replace(e, best=model.Config.of({"BLOCK": 32})),
}


@pytest.mark.parametrize("case", HOSTILE_CONFIGS)
def test_a_config_the_kernel_does_not_accept_is_a_miss_with_one_warning(
    tmp_path: Path, captured: tuple[Path, Run], case: str
) -> None:
    results = read_results(captured[0])
    edited = [HOSTILE_CONFIGS[case](e) if e.kernel.name == KERNELS[0] else e for e in results.entries]
    bundle = tmp_path / "edited.pb.zst"
    write_results(bundle, results.with_entries(tuple(edited)))

    run = run_program(tmp_path, TUNED_KERNELS_PATH=str(bundle))
    assert run.report["searches"] == ["add"]
    assert run.report["stats"]["hits"] == 1
    assert (
        len(run.warnings) == 1
        and "is not one of the configs of helion.tests.helion_program.add" in run.warnings[0]
    )


def test_a_bundle_tuned_with_another_helion_is_not_served_and_says_which(
    tmp_path: Path, captured: tuple[Path, Run]
) -> None:
    results = read_results(captured[0])
    edited = tuple(dataclasses.replace(e, key=("helion 0.9.0", *e.key[1:])) for e in results.entries)
    bundle = tmp_path / "old.pb.zst"
    write_results(bundle, results.with_entries(edited))

    run = run_program(tmp_path, TUNED_KERNELS_PATH=str(bundle))
    assert sorted(run.report["searches"]) == ["add", "row_sum"]
    assert run.report["stats"]["misses_by_reason"] == {"other key": 2}
    helion = keys.versions()[0].removeprefix("helion ")
    (warning,) = run.warnings  # one file, one cause: said once for both kernels
    assert f"tuned with helion 0.9.0, running {helion}" in warning


def test_a_kernel_whose_program_chose_its_own_cache_keeps_it_and_stats_say_so(tmp_path: Path) -> None:
    run = run_program(tmp_path, "--cache", "ProgramsOwnCache")
    assert sorted(run.report["searches"]) == ["add", "row_sum"]
    assert run.report["stats"]["stepped_aside"] == dict.fromkeys(
        KERNELS, "the program chose ProgramsOwnCache"
    )
    assert run.report["stats"]["misses"] == 0 and not list((tmp_path / "overlay").glob("overlay-*"))


KEY = ("helion 1.5.0", "torch 2.13.0", "config space ab", "((torch.float32,),)", "()")


@pytest.mark.parametrize(
    ("stored", "why"),
    [
        (KEY, None),
        (("helion 1.4.0", *KEY[1:]), "helion 1.4.0, running 1.5.0"),
        ((KEY[0], "torch 2.11.0", *KEY[2:]), "torch 2.11.0, running 2.13.0"),
        ((*KEY[:2], "config space cd", *KEY[3:]), "another config space (another Helion or other settings)"),
        ((*KEY[:3], "((torch.float16,),)", "()"), None),  # another specialization: just another key
        (("x",), None),
    ],
)
def test_what_differs_between_two_keys_of_a_helion_kernel(stored: model.TuningKey, why: str | None) -> None:
    assert keys.mismatch(stored, KEY) == why
