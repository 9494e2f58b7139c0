"""torch.compile: Inductor's max-autotune GEMM choices captured, served from a bundle with no benchmarking,
missed keys autotuned by Inductor and remembered, and foreign or edited choices never served.

On the CPU Inductor chooses between ATen's mm and the program's own `external_matmul` (its Triton templates
need a GPU; tests/test_gpu.py captures and serves those), through the same hooks and the same real
`KernelTemplateChoice` objects."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import torch
from tuned_kernels.registry import Registry
from tuned_kernels.registry.settings import Settings

from tests import factories, forked_python
from tuned_kernels import model, resolving
from tuned_kernels.decision import Measured
from tuned_kernels.errors import TunedKernelsWarning
from tuned_kernels.inductor_edge import autotune_cache, choices, graphs, hooks, keys, source_key
from tuned_kernels.results import read_results, write_results

ROOT = Path(__file__).resolve().parents[1]
TK = [sys.executable, "-m", "tuned_kernels"]
APP = [sys.executable, str(ROOT / "tests/corpora/inductor_app.py")]
MM_KEY = ("((torch.float32, [64, 256], [256, 1]), (torch.float32, [256, 128], [128, 1]))",)


def _run(tmp_path: Path, *command: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """A fresh process with empty Inductor caches (each its own) and the test's overlay directory."""
    inductor_cache = tmp_path / f"inductor-{len(list(tmp_path.glob('inductor-*')))}"
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(inductor_cache),
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay"),
        **extra,
    }
    done = forked_python.run([*TK, *command], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]  # the program checked its output against eager
    return done


def _coverage(tmp_path: Path, bundle: Path, **extra: str) -> dict[str, object]:
    done = _run(tmp_path, "coverage", "--json", str(bundle), "--", *APP, **extra)
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def cold_capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The program captured with empty Inductor caches (a capture neither reads nor writes the overlay):
    the bundle, and the capture's run."""
    folder = tmp_path_factory.mktemp("cold")
    bundle = folder / "cold.textproto"
    return bundle, _run(folder, "capture", "-o", str(bundle), "--", *APP)


def test_inductor_gemm_choice_is_captured_then_served_from_the_bundle(
    tmp_path: Path, cold_capture: tuple[Path, subprocess.CompletedProcess[str]]
) -> None:
    """The choice is served where the graph is not (TUNED_KERNELS_COMPILED=0 here); with the graph the
    bundle holds too, Inductor compiles nothing and asks for no choice (tests/test_graphs.py), the graph
    loaded with its Dynamo frame or, frames off, found in Inductor's cache."""
    bundle, _ = cold_capture
    decisions = [
        e for e in read_results(bundle).entries if e.kernel.name not in (graphs.NAME, source_key.NAME)
    ]
    key, gemm = decisions  # the key's winner, and the graph's one GEMM's final choice
    assert [(e.kernel.name, e.key) for e in (key, gemm)] == [
        ("inductor.mm", MM_KEY),
        ("inductor.mm", choices.at_occurrence(MM_KEY, 0)),
    ]
    assert {dict(e.best.kwargs)[keys.TEMPLATE] for e in (key, gemm)} == {"aten::mm"}  # the slow mm lost
    assert key.kernel.source_hash == keys.torch_source_hash()
    loaded = {"hits": 0, "misses": 0, "frames": 1}  # its Dynamo frame loaded, with its graph: none looked up
    graph_served = {"hits": 0, "misses": 0, "missed": [], "predicted": [], "graphs": loaded}
    assert _coverage(tmp_path, bundle) == graph_served
    found = {"hits": 1, "misses": 0, "frames": 0}  # the graph found in Inductor's cache
    assert _coverage(tmp_path, bundle, TUNED_KERNELS_FRAMES="0") == {**graph_served, "graphs": found}
    choice_served = {
        "hits": 1,
        "misses": 0,
        "missed": [],
        "predicted": [],
        "graphs": {"hits": 0, "misses": 1, "frames": 0},
    }
    assert _coverage(tmp_path, bundle, TUNED_KERNELS_COMPILED="0") == choice_served


def test_a_capture_on_a_machine_already_warm_times_nothing_and_records_what_a_cold_one_does(
    tmp_path: Path, cold_capture: tuple[Path, subprocess.CompletedProcess[str]]
) -> None:
    """The user's Inductor cache is warm from a plain run (no tuned-kernels): a capture starts from its
    tuning results, benchmarks no GEMM choice, and its bundle holds the same choices a cold capture's does."""

    def benchmarked(done: subprocess.CompletedProcess[str]) -> int:
        return int(re.findall(r"SLOW_MM_CALLS (\d+)", done.stdout)[-1])

    def choices_of(bundle: Path) -> list[tuple[str, model.TuningKey, model.Config]]:
        return [
            (e.kernel.name, e.key, e.best)
            for e in read_results(bundle).entries
            if e.kernel.name != graphs.NAME
        ]

    cold_bundle, cold = cold_capture
    users = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "users-inductor")}
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNED_KERNELS")} | users
    plain = forked_python.run(APP, env=env, capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr[-3000:]
    warm = _run(tmp_path, "capture", "-o", str(tmp_path / "warm.textproto"), "--", *APP, **users)
    assert benchmarked(plain) > 0 and benchmarked(cold) > 0
    assert benchmarked(warm) == 0
    assert choices_of(tmp_path / "warm.textproto") == choices_of(cold_bundle) != []


def test_inductor_gemm_choice_missing_from_bundles_is_autotuned_once_then_remembered(tmp_path: Path) -> None:
    empty = tmp_path / "no-bundles"
    empty.mkdir()
    compiled = {"hits": 0, "misses": 1, "frames": 0}  # coverage gives each run an empty Inductor cache
    missed = [["inductor.mm", list(MM_KEY)]]
    first = {"hits": 0, "misses": 1, "missed": missed, "predicted": [], "graphs": compiled}
    assert _coverage(tmp_path, empty) == first
    from_overlay = {"hits": 1, "misses": 0, "missed": [], "predicted": [], "graphs": compiled}
    assert _coverage(tmp_path, empty) == from_overlay


# -- in this process: what is served, what is refused ------------------------------------------------------


def _mm_entry(template: str, **params: model.Scalar) -> model.Entry:
    best = model.Config.of({keys.TEMPLATE: template, **params})
    return model.Entry(keys.identity_of("mm"), MM_KEY, best, (model.Timing(best, 0.01),))


@pytest.fixture
def serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A registry serving the results file the test writes to the returned path, hooked into Inductor."""
    bundle = tmp_path / "bundle.textproto"
    monkeypatch.setenv("TUNED_KERNELS_PATH", str(bundle))
    monkeypatch.setenv("TUNED_KERNELS_CACHE_DIR", str(tmp_path / "overlay"))
    hooks.install()
    torch._dynamo.reset()
    try:
        yield bundle
    finally:
        hooks.uninstall()
        torch._dynamo.reset()


def _compile_mm(registry: Registry) -> None:
    import torch._inductor.config as inductor_config

    a, b = torch.randn(64, 256), torch.randn(256, 128)
    with resolving.installed(registry), inductor_config.patch(force_disable_caches=True):
        out = torch.compile(lambda x, y: x @ y, mode="max-autotune")(a, b)
    torch.testing.assert_close(out, a @ b)


def _header(torch_version: str) -> model.Header:
    header = Registry(Settings()).load().header(model.Producer.CAPTURE)
    return dataclasses.replace(
        header, compiler=dataclasses.replace(header.compiler, torch_version=torch_version)
    )


def test_stored_choice_inductor_does_not_offer_is_not_served(serving: Path) -> None:
    edited = _mm_entry("triton::mm", BLOCK_M=7, BLOCK_N=7, BLOCK_K=7)  # not a config Inductor generates
    write_results(serving, model.Results(_header(torch.__version__), (edited,)))
    registry = Registry(Settings())
    with pytest.warns(TunedKernelsWarning, match=r"is not one of the configs of inductor\.mm"):
        _compile_mm(registry)  # and the output is right
    assert registry.stats.hits == 0


def test_stored_choice_is_served_when_inductor_offers_it(serving: Path) -> None:
    write_results(serving, model.Results(_header(torch.__version__), (_mm_entry("aten::mm"),)))
    registry = Registry(Settings())
    _compile_mm(registry)
    assert (registry.stats.hits, registry.stats.served_from) == (1, {str(serving): 1})


def _slow_mm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    """A second choice, so that Inductor times its choices; timed as never the winner (below), since a
    missed key's winner is one of the template choices."""
    torch.mm(a, b, out=out)


def _timed_as_slowest(original: Any) -> Any:
    def benchmark(caller: Any, *args: Any, out: torch.Tensor) -> float:
        return 1e6 if caller.choice.name == _slow_mm.__name__ else float(original(caller, *args, out=out))

    return benchmark


def _compile_two_mms(registry: Registry) -> None:
    """One graph, two GEMMs with the same key."""
    import torch._inductor.config as inductor_config
    from torch._inductor.select_algorithm import ExternKernelCaller

    a, b = torch.randn(64, 256), torch.randn(256, 128)

    def two(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x @ y, (x * 2) @ y

    with (
        resolving.installed(registry),
        inductor_config.patch(force_disable_caches=True, external_matmul=[_slow_mm]),
        mock.patch.object(ExternKernelCaller, "benchmark", _timed_as_slowest(ExternKernelCaller.benchmark)),
    ):
        out = torch.compile(two, mode="max-autotune")(a, b)
    torch.testing.assert_close(out, two(a, b))


def test_a_choice_stored_for_one_gemm_of_a_graph_is_served_to_that_gemm_alone(serving: Path) -> None:
    """GEMMs of one graph may share a key and still end differently (Inductor fused an epilogue into one of
    them): a choice stored for the key's second GEMM in the graph serves that GEMM; the first, which the
    bundle lacks, Inductor autotunes."""
    at_second = dataclasses.replace(_mm_entry("aten::mm"), key=choices.at_occurrence(MM_KEY, 1))
    write_results(serving, model.Results(_header(torch.__version__), (at_second,)))
    registry = Registry(Settings())
    _compile_two_mms(registry)
    assert (registry.stats.hits, registry.stats.misses) == (1, 1)
    assert registry.stats.missed_keys == [("inductor.mm", MM_KEY)]


def test_a_choice_stored_for_a_key_serves_each_of_its_gemms_without_one_of_their_own(serving: Path) -> None:
    write_results(serving, model.Results(_header(torch.__version__), (_mm_entry("aten::mm"),)))
    registry = Registry(Settings())
    _compile_two_mms(registry)
    assert (registry.stats.hits, registry.stats.misses) == (2, 0)


def test_a_lookup_table_the_program_set_answers_before_the_bundles(
    serving: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inductor's own look-up table (`config.lookup_table.table`, read on CUDA devices only: here its device
    key is made to say "this device" too) answers first; the resolver is asked only where it has nothing."""
    import torch._inductor.config as inductor_config
    from torch._inductor.lookup_table import LookupTableChoices

    write_results(serving, model.Results(_header(torch.__version__), (_mm_entry("aten::mm"),)))
    monkeypatch.setattr(LookupTableChoices, "_get_device_key", staticmethod(lambda device: "this device"))
    monkeypatch.setattr(
        LookupTableChoices, "_get_lookup_table", lambda self: inductor_config.lookup_table.table
    )
    table = {f"{MM_KEY[0]}+mm": [{"template_id": "aten::mm"}]}
    registry = Registry(Settings())
    with inductor_config.patch({"lookup_table.table": table}):
        _compile_mm(registry)
    assert (registry.stats.hits, registry.stats.misses) == (0, 0)  # never asked
    torch._dynamo.reset()
    with inductor_config.patch({"lookup_table.table": {"another key+mm": [{"template_id": "aten::mm"}]}}):
        _compile_mm(registry)
    assert registry.stats.hits == 1


def test_choices_made_with_another_torch_are_rejected_with_the_reason(serving: Path) -> None:
    foreign = dataclasses.replace(
        _mm_entry("aten::mm"),
        kernel=model.KernelIdentity("inductor.mm", factories.source_hash("torch 2.0.0")),
    )
    write_results(serving, model.Results(_header("2.0.0"), (foreign,)))
    registry = Registry(Settings())
    with pytest.warns(
        TunedKernelsWarning, match=rf"made with torch 2\.0\.0, running {re.escape(torch.__version__)}"
    ):
        _compile_mm(registry)
    assert registry.stats.hits == 0


def test_a_choices_class_the_program_set_is_kept_with_one_warning() -> None:
    import torch._inductor.config as inductor_config
    from torch._inductor.lookup_table import LookupTableChoices

    with inductor_config.patch(inductor_choices_class=LookupTableChoices):
        with pytest.warns(TunedKernelsWarning, match="GEMM choices are not served"):
            hooks.install()
        assert inductor_config.inductor_choices_class is LookupTableChoices


# -- the tuned configs of Inductor's generated kernels: its autotune cache, harvested and refilled ----------

BEST_CONFIG = {  # as Inductor writes one after coordinate descent (torch 2.11, a reduction kernel)
    "XBLOCK": 1,
    "R0_BLOCK": 2048,
    "num_warps": 16,
    "num_stages": 1,
    "configs_hash": "7c5e1d0a" * 8,
    "found_by_coordesc": True,
    "time_taken_ms": 412,
    "triton_cache_hash": "QZ3N2MIBK5Y6C7A",
}
RELATIVE = "cq/" + "ab" * 32 + ".best_config"


def _cache_with(tmp_path: Path, files: dict[str, object]) -> Path:
    cache = tmp_path / "inductor-cache"
    for relative, data in files.items():
        (cache / relative).parent.mkdir(parents=True, exist_ok=True)
        (cache / relative).write_text(json.dumps(data))
    return cache


def test_harvested_best_configs_are_written_back_as_inductor_wrote_them(tmp_path: Path) -> None:
    entries = autotune_cache.harvest(_cache_with(tmp_path, {RELATIVE: BEST_CONFIG}))
    assert [(e.kernel, e.key) for e in entries] == [(autotune_cache.identity(), (RELATIVE,))]
    bundle = tmp_path / "b.textproto"
    write_results(bundle, model.Results(_header(torch.__version__), tuple(entries)))
    fresh = tmp_path / "fresh"
    assert autotune_cache.install(read_results(bundle).entries, fresh).written == 1
    assert json.loads((fresh / RELATIVE).read_text()) == BEST_CONFIG


def test_a_capture_keeps_the_best_configs_carried_over_that_its_program_read_or_rewrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm start copies every `.best_config` of the user's cache; the bundle gets those the program
    looked up (recorded by the look-up, inside a capture only) or rewrote, and those it wrote itself."""
    from tuned_kernels.inductor_edge import warm_start

    users, private = tmp_path / "users", tmp_path / f"{autotune_cache.CAPTURING_PREFIX}1"
    names = {n: f"{n}{n}/{n * 64}.best_config" for n in "abcd"}
    for n in "abc":
        (users / names[n]).parent.mkdir(parents=True)
        (users / names[n]).write_text(
            json.dumps({"XBLOCK": 64, "num_warps": 4, "num_stages": 1, "configs_hash": n})
        )
    seeded = warm_start.seed(users, private)
    assert set(seeded) == {names[n] for n in "abc"}
    autotune_cache.record_read(str(private / names["a"]), private)  # outside a capture: not recorded
    assert warm_start.used(private, seeded) == set()
    monkeypatch.setenv("TUNED_KERNELS_CAPTURE", str(tmp_path / "bundle.pb"))
    autotune_cache.record_read(str(users / names["a"]), users)  # not capture's own folder (a pytest dump's)
    assert not (users / autotune_cache.READS).exists()
    autotune_cache.record_read(str(private / names["a"]), private)
    autotune_cache.record_read(
        str(users / names["b"]), private
    )  # another cache directory's: not this capture's
    (private / names["c"]).write_text(
        json.dumps({"XBLOCK": 128, "num_warps": 4, "num_stages": 1, "configs_hash": "c"})
    )
    (private / names["d"]).parent.mkdir(parents=True)
    (private / names["d"]).write_text(
        json.dumps({"XBLOCK": 32, "num_warps": 2, "num_stages": 1, "configs_hash": "d"})
    )
    assert warm_start.used(private, seeded) == {names["a"], names["c"], names["d"]}
    harvested = autotune_cache.harvest(private, warm_start.used(private, seeded))
    assert sorted(e.key[0] for e in harvested) == sorted(names[n] for n in "acd")


def test_a_best_config_already_in_the_cache_is_never_replaced(tmp_path: Path) -> None:
    cache = _cache_with(tmp_path, {RELATIVE: {**BEST_CONFIG, "XBLOCK": 4}})
    (entry,) = autotune_cache.harvest(_cache_with(tmp_path / "captured", {RELATIVE: BEST_CONFIG}))
    assert autotune_cache.install([entry], cache) == autotune_cache.Installed(0, [])
    assert json.loads((cache / RELATIVE).read_text())["XBLOCK"] == 4


@pytest.mark.parametrize(
    "edit",
    [
        {"XBLOCK": 3},  # not a power of two
        {"R0_BLOCK": 1 << 20},  # beyond any block Inductor picks
        {"num_warps": 0},
        {"num_stages": "3"},
        {"configs_hash": "../../etc"},
        {"pre_hook": "os.system"},  # a field Inductor never writes
        {"found_by_coordesc": "yes"},
        {"XBLOCK": True},
    ],
)
def test_an_implausible_best_config_is_neither_harvested_nor_written(
    tmp_path: Path, edit: dict[str, object]
) -> None:
    edited = {**BEST_CONFIG, **edit}
    assert autotune_cache.harvest(_cache_with(tmp_path, {RELATIVE: edited})) == []
    forged = model.Entry(autotune_cache.identity(), (RELATIVE,), model.Config.of(edited))  # type: ignore[arg-type]
    installed = autotune_cache.install([forged], tmp_path / "fresh")
    assert installed.written == 0 and installed.refused == [
        f"{RELATIVE}: not a config Inductor could have chosen"
    ]
    assert not (tmp_path / "fresh").exists()


@pytest.mark.parametrize("relative", ["../" + "ab" * 32 + ".best_config", "cq/../../x.best_config", "/etc/x"])
def test_a_best_config_path_outside_the_cache_is_never_written(tmp_path: Path, relative: str) -> None:
    forged = model.Entry(autotune_cache.identity(), (relative,), model.Config.of(BEST_CONFIG))  # type: ignore[arg-type]
    installed = autotune_cache.install([forged], tmp_path / "cache")
    assert installed.written == 0 and installed.refused == [
        f"{relative}: not a name Inductor gives a tuned config"
    ]
    assert list(tmp_path.rglob("*.best_config")) == []


def test_serving_fills_inductors_cache_with_the_bundles_best_configs(serving: Path, tmp_path: Path) -> None:
    (entry,) = autotune_cache.harvest(_cache_with(tmp_path / "captured", {RELATIVE: BEST_CONFIG}))
    write_results(serving, model.Results(_header(torch.__version__), (entry,)))
    cache = tmp_path / "inductor-cache-of-the-user"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
        hooks.install(Registry(Settings()).stored)
    assert json.loads((cache / RELATIVE).read_text()) == BEST_CONFIG


def test_a_final_choice_replaces_the_faster_winner_recorded_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inductor's scheduler may take a Triton template slower alone than ATen's mm because it fuses the
    epilogue into it; that final choice is what a served process must get, so that it fuses the same way."""
    monkeypatch.setenv("TUNED_KERNELS_PATH", str(tmp_path / "no-bundles"))
    monkeypatch.setenv("TUNED_KERNELS_CACHE_DIR", str(tmp_path / "overlay"))
    aten = _mm_entry("aten::mm").best
    triton = _mm_entry("triton::mm", BLOCK_M=64, BLOCK_N=64, BLOCK_K=32).best
    timings = {aten: 0.010, triton: 0.012}
    registry, identity = Registry(Settings()), keys.identity_of("mm")
    decision = registry.decide(identity, MM_KEY, lambda _: True)
    assert registry.record(Measured(identity, MM_KEY, decision, timings)).best == aten  # type: ignore[union-attr]
    registry.record(Measured(identity, MM_KEY, decision, timings, chosen=triton))
    assert registry.stats.misses == 1  # one key tuned once
    registry.flush()  # the overlay is written off the thread that missed
    overlay_path = registry.load().overlay_path
    assert overlay_path is not None
    (held,) = read_results(overlay_path).entries
    assert (held.best, held.best_time_ms) == (triton, 0.012)
    assert Registry(Settings()).decide(identity, MM_KEY, lambda _: True).configs == (triton,)


class _Choice:
    """What the Inductor edge reads of a `KernelTemplateChoice` (its template and parameters), and of the
    caller Inductor makes of it (`annotations["ktc"]`)."""

    def __init__(self, template: str, **params: model.Scalar) -> None:
        self.template = dataclasses.make_dataclass("Template", [("uid", str)])(template)
        self.params = dataclasses.make_dataclass("Params", [("to_kwargs", object)])(lambda: params)
        self.annotations = {"ktc": self}


class _Graph:
    """Stands for a graph Inductor lowers (`V.graph`)."""


def test_a_final_choice_other_than_the_winner_is_remembered_for_its_gemm_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inductor timed a GEMM's choices, ATen's mm won, but its scheduler finally took a Triton template
    (it fused an epilogue into it): that GEMM's occurrence in the graph gets the template, the key ATen's mm,
    and a graph compiled later with two GEMMs of the key gets the template for the first, the mm for the
    second."""
    from torch._inductor.virtualized import V

    monkeypatch.setenv("TUNED_KERNELS_PATH", str(tmp_path / "no-bundles"))
    monkeypatch.setenv("TUNED_KERNELS_CACHE_DIR", str(tmp_path / "overlay"))
    monkeypatch.setattr(choices, "key_of", lambda _: MM_KEY)
    registry = Registry(Settings())

    def lowered(graph: object) -> tuple[_Choice, _Choice, _Choice | None]:
        aten, triton = _Choice("aten::mm"), _Choice("triton::mm", BLOCK_M=64, num_warps=4, num_stages=3)
        with V.set_graph_handler(graph):  # type: ignore[arg-type]
            return aten, triton, choices._serve(registry, {"aten": [aten], "triton": [triton]}, None, "mm")

    aten, triton, served = lowered(_Graph())
    assert served is None  # missed: Inductor times the choices
    with resolving.installed(registry):
        choices.remember_timings({aten: 0.010, triton: 0.012}, "mm", [], [], dict)
    choices.remember_final_choice(registry, triton)
    registry.flush()  # the overlay is written off the thread that missed
    overlay_path = registry.load().overlay_path
    assert overlay_path is not None
    held = {e.key: dict(e.best.kwargs)[keys.TEMPLATE] for e in read_results(overlay_path).entries}
    assert held == {MM_KEY: "aten::mm", choices.at_occurrence(MM_KEY, 0): "triton::mm"}
    later = _Graph()
    assert [lowered(later)[2].template.uid for _ in range(2)] == ["triton::mm", "aten::mm"]  # type: ignore[union-attr]


def test_gemms_of_one_key_timed_apart_are_each_served_their_own_final_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inductor timed each of two GEMMs sharing a key and the timings crowned different winners (as noise
    does with close configs): each GEMM's occurrence is served its own, whichever the key keeps."""
    from torch._inductor.virtualized import V

    capture = tmp_path / "captured.pb.zst"
    monkeypatch.setenv("TUNED_KERNELS_PATH", str(capture))
    monkeypatch.setenv("TUNED_KERNELS_CACHE_DIR", str(tmp_path / "overlay"))
    monkeypatch.setattr(choices, "key_of", lambda _: MM_KEY)
    registry = Registry(Settings.from_environ({"TUNED_KERNELS_CAPTURE": str(capture)}))

    def offered() -> tuple[_Choice, _Choice]:
        return _Choice("triton::mm", BLOCK_M=64, num_warps=4, num_stages=3), _Choice("triton::mm", BLOCK_M=32)

    captured = _Graph()
    for winner in (0, 1):
        choice = offered()
        with V.set_graph_handler(captured):  # type: ignore[arg-type]
            assert choices._serve(registry, {"triton": list(choice)}, None, "mm") is None
        with resolving.installed(registry):
            choices.remember_timings({choice[winner]: 0.010, choice[1 - winner]: 0.011}, "mm", [], [], dict)
        choices.remember_final_choice(registry, choice[winner])
    served, later = Registry(Settings()), _Graph()
    with V.set_graph_handler(later):  # type: ignore[arg-type]
        blocks = [choices._serve(served, {"triton": list(offered())}, None, "mm") for _ in range(2)]
    assert [dict(b.params.to_kwargs())["BLOCK_M"] for b in blocks] == [64, 32]  # type: ignore[union-attr]


def test_capture_keeps_the_kernels_of_inductors_code_not_those_it_compiled_only_to_time(
    tmp_path: Path,
) -> None:
    """max-autotune compiles hundreds of template candidates and tried fusions, in its compile workers; a
    served process never compiles them again, so the capture keeps only the kernels of the generated code."""
    import torch._inductor.kernel.bmm
    import torch._inductor.kernel.mm  # noqa: F401  (Inductor's mm and bmm templates, as max-autotune has them)

    capture = tmp_path / "captured.pb.zst"
    sink = factories.capture_sink(capture)
    timed_only = ["triton_mm", "triton_bmm", "triton_"]
    generated = ["triton_tem_fused_addmm_gelu_t_2", "triton_poi_fused_gelu_3"]
    names = [*timed_only, *generated, "triton_add_kernel"]  # the last the program's own
    for i, name in enumerate(names):
        item, blobs = factories.with_artifact(
            factories.entry(key=(i, "torch.float16")), payload=name.encode()
        )
        sink.keep_compiled(item.artifacts[0], blobs, name)
    sink.flush()
    assert sorted(e.kernel.name for e in read_results(capture).entries) == [
        "compiled:triton_add_kernel",
        "compiled:triton_poi_fused_gelu_3",
        "compiled:triton_tem_fused_addmm_gelu_t_2",
    ]


def test_a_failure_inside_the_hooks_leaves_inductors_choice_with_one_warning(
    serving: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tuned_kernels.inductor_edge import choices

    def broken(_: object) -> model.TuningKey:
        raise AttributeError("'KernelInputs' object has no attribute 'shapes_hinted'")  # another torch

    monkeypatch.setattr(choices, "key_of", broken)
    monkeypatch.setattr(choices, "_state", choices._Lowering())
    registry = Registry(Settings())
    with pytest.warns(TunedKernelsWarning, match="could not look up Inductor's GEMM choice: AttributeError"):
        _compile_mm(registry)  # and the output is right
    assert registry.stats.hits == registry.stats.misses == 0


def test_inspect_shows_inductor_choices_template_first() -> None:
    from tuned_kernels.results.report import results_table

    triton = _mm_entry("triton::mm", BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    aten = dataclasses.replace(_mm_entry("aten::mm"), kernel=keys.identity_of("addmm"))
    table = results_table(model.Results(_header(torch.__version__), (aten, triton))).splitlines()
    assert [line.split("  ")[0] for line in table[-2:]] == ["inductor.addmm", "inductor.mm"]
    assert "  aten::mm  " in table[-2]
    assert "  triton::mm BLOCK_K=32 BLOCK_M=64 BLOCK_N=64 warps=4 stages=3  " in table[-1]


def test_a_bundles_tuned_config_left_out_is_said_once(
    serving: Path, tmp_path: Path, recwarn: pytest.WarningsRecorder
) -> None:
    (entry,) = autotune_cache.harvest(_cache_with(tmp_path / "captured", {RELATIVE: BEST_CONFIG}))
    forged = [dataclasses.replace(entry, key=(f"../{i}" + RELATIVE[2:],)) for i in range(2)]
    write_results(serving, model.Results(_header(torch.__version__), (entry, *forged)))
    cache = tmp_path / "inductor-cache-of-the-user"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
        hooks.install(Registry(Settings()).stored)
    assert json.loads((cache / RELATIVE).read_text()) == BEST_CONFIG  # the rest is written
    said = [str(w.message) for w in recwarn]
    assert said == [
        f"tuned-kernels: left out a tuned config of the bundles: ../0{RELATIVE[2:]}: not a name Inductor gives "
        "a tuned config (and 1 more); Inductor tunes that kernel as usual"
    ]


# a served process's look-up of a kernel's tuned config: its hooks are installed as Inductor's config is
# imported; tuned-kernels turns Triton's interpreter on here (no GPU), under which Inductor reads no
# autotune cache, so it is turned off again
SERVED_LOOKUP = r"""
import json, os, sys
import torch._inductor.config
from torch._inductor.runtime.triton_heuristics import check_autotune_cache
os.environ.pop("TRITON_INTERPRET", None)
from triton import Config
compiled = [Config({"XBLOCK": x}, num_warps=2, num_stages=1) for x in (4, 8, 16)]
meta = {"coordinate_descent_tuning": True, "autotune_local_cache": True}
configs, _, info = check_autotune_cache(compiled, sys.argv[1], meta)
print(json.dumps({"state": info.get("autotune_cache_state"), "xblocks": [c.kwargs["XBLOCK"] for c in configs]}))
"""


def test_a_served_process_reads_a_bundled_best_config_recorded_under_the_capturing_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A served graph's kernel looks its tuned config up under the capturing machine's cache directory (the
    path its pickled autotuner holds): a fresh process reads the bundle's file from its own cache directory,
    coordinate descent's winner alone, and writes nothing under the recorded path. Fails when the look-up
    mend is not installed by serving, or reads the path as recorded (torch 2.13 still does)."""
    from torch._inductor.runtime.autotune_cache import AutotuneCache
    from torch._inductor.runtime.triton_heuristics import hash_configs
    from triton import Config

    capture = tmp_path / "inductor-capture"
    kernel = capture / "ab" / f"cab{'0' * 49}.py"  # the path a pickled autotuner records
    kernel.parent.mkdir(parents=True)
    kernel.write_text("")
    compiled = [Config({"XBLOCK": x}, num_warps=2, num_stages=1) for x in (4, 8, 16)]
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    saved = AutotuneCache.create({"autotune_local_cache": True}, str(kernel), hash_configs(compiled))
    assert saved is not None
    saved.save(Config({"XBLOCK": 8}, num_warps=2, num_stages=1), 5_000_000, found_by_coordesc=True)
    entries = autotune_cache.harvest(capture)
    assert len(entries) == 1
    bundle = tmp_path / "bundle.textproto"
    write_results(bundle, model.Results(_header(torch.__version__), tuple(entries)))
    shutil.rmtree(capture)  # served on another machine: the recorded directory is not there

    env = {
        **os.environ,
        "TUNED_KERNELS": "1",
        "TUNED_KERNELS_PATH": str(bundle),
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor-served"),
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay"),
    }
    env.pop("TRITON_INTERPRET", None)
    done = forked_python.run(
        [sys.executable, "-c", SERVED_LOOKUP, str(kernel)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"state": "hit", "xblocks": [8]}, done.stderr[-2000:]
    assert not capture.exists()  # nothing written under the recorded path
