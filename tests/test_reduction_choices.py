"""Inductor's choice between a single-config reduction and its halved-block copy, timed at every first
launch, is recorded by capture and served: the kernel runs the config that won, timing nothing. A kernel
found in the autotune cache runs its stored config alone; any other kernel is scaled and timed as Inductor
does. (Inductor's own halving and timing need a GPU: here stand-ins do what they do to the kernel.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from triton import Config

from tuned_kernels import model
from tuned_kernels.inductor_edge import autotune_cache, reduction_choices

MODULE = "cabcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopq"
ORIGINAL = Config({"XBLOCK": 2, "R0_BLOCK": 1024}, num_warps=8, num_stages=1)
HALVED = Config({"XBLOCK": 2, "R0_BLOCK": 512}, num_warps=8, num_stages=1)


class Launcher:
    def __init__(self, config: Config) -> None:
        self.config = config


class Compiled:
    def __init__(self, config: Config) -> None:
        self.config = config


class Kernel:
    """What Inductor's autotuner holds that the patches read: its module, its cache state, its configs."""

    def __init__(self, state: str) -> None:
        self.filename = f"/cache/ab/{MODULE}.py"
        self.autotune_cache_info = {"autotune_cache_state": state}
        self.compile_results = [Compiled(ORIGINAL)]
        self.launchers = [Launcher(ORIGINAL)]


@pytest.fixture
def inductor(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Inductor's autotuner with stand-ins for its halving (adds the copy) and its timing (keeps the
    copy, as noise may); the patches installed over them. Counts what the stand-ins were asked to do."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    asked = {"halved": 0, "timed": 0}

    def halve(self: Any) -> None:
        asked["halved"] += 1
        self.launchers.append(Launcher(HALVED))
        self.compile_results.append(Compiled(HALVED))

    def time_them(self: Any, *args: Any, **kwargs: Any) -> None:
        asked["timed"] += len(self.launchers) > 1
        self.launchers = self.launchers[-1:]

    monkeypatch.setattr(CachingAutotuner, "_dynamic_scale_rblock", halve)
    monkeypatch.setattr(CachingAutotuner, "autotune_to_one_config", time_them)
    monkeypatch.setattr(reduction_choices, "_chosen", {})
    monkeypatch.setattr(reduction_choices, "_serving", [False])
    monkeypatch.setattr(reduction_choices, "_run_as_chosen", [0])
    reduction_choices.install()
    reduction_choices.serve([])
    return asked


def first_launch(kernel: Kernel) -> list[Config]:
    """What Inductor's `precompile` and first `run` do with the kernel's launchers."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    CachingAutotuner._dynamic_scale_rblock(kernel)  # type: ignore[arg-type]
    if len(kernel.launchers) > 1:
        CachingAutotuner.autotune_to_one_config(kernel)  # type: ignore[arg-type]
    return [launcher.config for launcher in kernel.launchers]


def chosen(config: Config) -> None:
    stored = model.Config.of(config.kwargs, num_warps=config.num_warps, num_stages=config.num_stages)
    reduction_choices.serve([model.Entry(reduction_choices.identity(), (MODULE,), stored)])


def test_a_kernel_found_in_the_autotune_cache_runs_its_stored_config_alone(inductor: dict[str, int]) -> None:
    assert first_launch(Kernel("hit")) == [ORIGINAL]
    assert inductor == {"halved": 0, "timed": 0}


def test_a_single_config_kernel_with_no_choice_served_is_halved_and_timed_as_inductor_does(
    inductor: dict[str, int],
) -> None:
    assert first_launch(Kernel("only 1 config")) == [HALVED]
    assert inductor == {"halved": 1, "timed": 1}


@pytest.mark.parametrize(("won", "halved"), [(ORIGINAL, 0), (HALVED, 1)], ids=["original-won", "copy-won"])
def test_a_single_config_kernel_runs_the_config_that_won_at_capture_timing_nothing(
    inductor: dict[str, int], won: Config, halved: int
) -> None:
    chosen(won)
    kernel = Kernel("only 1 config")
    assert first_launch(kernel) == [won]
    assert [result.config for result in kernel.compile_results] == [won]  # as Inductor's timing leaves it
    assert inductor == {"halved": halved, "timed": 0}  # the copy made only where it won
    assert reduction_choices.run_as_chosen() == 1  # counted for the verbose summary


def test_once_serving_stops_inductor_halves_and_times_as_it_does(inductor: dict[str, int]) -> None:
    chosen(ORIGINAL)
    reduction_choices.stop()
    assert first_launch(Kernel("hit")) == [HALVED] and first_launch(Kernel("only 1 config")) == [HALVED]
    assert inductor == {"halved": 2, "timed": 2}


def test_a_capture_records_each_choice_and_its_bundle_serves_it(
    inductor: dict[str, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / f"{autotune_cache.CAPTURING_PREFIX}x"
    cache.mkdir()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    monkeypatch.setenv("TUNED_KERNELS_CAPTURE", str(tmp_path / "captured.pb"))
    assert first_launch(Kernel("only 1 config")) == [HALVED]  # the capture times them; the copy wins
    (entry,) = reduction_choices.harvest(cache)
    assert entry.key == (MODULE,) and dict(entry.best.kwargs) == {"XBLOCK": 2, "R0_BLOCK": 512}
    monkeypatch.delenv("TUNED_KERNELS_CAPTURE")
    reduction_choices.serve([entry])
    assert first_launch(Kernel("only 1 config")) == [HALVED]
    assert inductor == {"halved": 2, "timed": 1}  # timed at capture only


@pytest.mark.parametrize(
    "line",
    [
        '{"module": "../../x", "blocks": {"R0_BLOCK": 512}, "num_warps": 8, "num_stages": 1}',
        f'{{"module": "{MODULE}", "blocks": {{"R0_BLOCK": 500}}, "num_warps": 8, "num_stages": 1}}',
        f'{{"module": "{MODULE}", "blocks": {{"rm -rf": 512}}, "num_warps": 8, "num_stages": 1}}',
        f'{{"module": "{MODULE}", "blocks": {{"R0_BLOCK": 512}}, "num_warps": 4096, "num_stages": 1}}',
        "not json",
    ],
    ids=["path", "not-a-power-of-two", "not-a-block", "warps", "garbage"],
)
def test_a_recorded_choice_inductor_could_not_have_made_is_not_shipped(tmp_path: Path, line: str) -> None:
    (tmp_path / reduction_choices.CHOICES).write_text(line + "\n")
    assert reduction_choices.harvest(tmp_path) == []
