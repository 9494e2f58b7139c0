"""Compiled kernels: `tune` keeps the winners', `compile` fills them in on a machine without the GPU, bundles
carry them content-addressed, and the registry serves them to Triton's cache so a hit compiles nothing."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tuned_kernels.aot.compile_command import CompileError, compile_results
from tuned_kernels.aot.kernels.builtin import CORPUS
from tuned_kernels.registry.loading import artifacts_fit
from tuned_kernels.registry.sinks import CaptureSink

from tests import factories, forked_python
from tuned_kernels import model
from tuned_kernels.errors import ResultsFormatError
from tuned_kernels.results import read_results, write_results
from tuned_kernels.results.merge import join
from tuned_kernels.triton_edge import cache_manager

ROOT = Path(__file__).resolve().parents[1]
BINARY = {"sm90": ".cubin", "gfx942": ".hsaco"}


def kernel_keys(results: model.Results) -> list[model.Entry]:
    """The entries of compiled kernels (an implementation choice compiles nothing)."""
    from tuned_kernels.kernels.matmul import MATMUL_CHOICE
    from tuned_kernels.triton_edge.keys import kernel_identity

    return [e for e in results.entries if e.kernel.name != kernel_identity(MATMUL_CHOICE).name]


def _compiler_env(tmp_path: Path) -> dict[str, str]:
    """Kernels must load as compiled Triton kernels (not the interpreter's) to be compiled."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return {**env, "TRITON_CACHE_DIR": str(tmp_path / "triton-cache")}


@pytest.fixture(scope="module", params=["sm90", "gfx942"])
def compiled(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> model.Results:
    """Quick cases of the built-in corpus, compiled here (no GPU) by `tuned-kernels compile`."""
    arch = request.param
    tmp = tmp_path_factory.mktemp(arch)
    env = _compiler_env(tmp)
    untuned = tmp / "untuned.textproto"
    subprocess.run(
        [sys.executable, str(ROOT / "tests/corpora/untuned_results.py"), arch, str(untuned)],
        env=env,
        check=True,
        timeout=300,
    )
    out = tmp / "compiled.pb.zst"
    run = forked_python.run(
        [sys.executable, "-m", "tuned_kernels", "compile", str(untuned), "--target", arch, "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert f"compiled {len(kernel_keys(read_results(untuned)))} kernels for {arch}" in run.stdout, run.stdout
    return read_results(out)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> cache_manager.ArtifactStore:
    """The store Triton's cache manager serves from, over Triton's own file cache in `tmp_path`; its problems"""
    from triton.runtime.cache import FileCacheManager

    held = cache_manager.ArtifactStore()
    monkeypatch.setattr(cache_manager.ArtifactCacheManager, "store", held)
    monkeypatch.setattr(cache_manager.ArtifactCacheManager, "inner_class", FileCacheManager)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    return held


def test_compile_gives_every_entry_its_winners_binary_and_metadata(compiled: model.Results) -> None:
    arch = compiled.header.target.arch
    for entry in compiled.entries:
        (artifact,) = entry.artifacts
        assert artifact.config == entry.best
        suffixes = sorted(Path(f.name).suffix for f in artifact.files)
        assert suffixes == sorted([".json", BINARY[arch]])
        for f in artifact.files:
            data = compiled.blobs[f.sha256]
            assert hashlib.sha256(data).hexdigest() == f.sha256 and len(data) == f.size_bytes > 0


def test_served_artifacts_load_through_tritons_own_metadata_parsing(
    compiled: model.Results, tmp_path: Path, store: cache_manager.ArtifactStore
) -> None:
    from triton.compiler.compiler import CompiledKernel

    store.add(compiled, "test bundle")
    for entry in compiled.entries:
        (artifact,) = entry.artifacts
        metadata_name = next(f.name for f in artifact.files if f.name.endswith(".json"))
        manager = cache_manager.ArtifactCacheManager(cache_manager.triton_manager_key(artifact.cache_key))
        group = manager.get_group(metadata_name)
        assert group is not None and all(Path(p).is_relative_to(tmp_path) for p in group.values())
        kernel = CompiledKernel(None, group, artifact.cache_key)
        assert kernel.name == entry.kernel.name.rsplit(".", 1)[-1]
        assert kernel.metadata.hash == artifact.cache_key
        assert f"{kernel.metadata.target.backend}:{kernel.metadata.target.arch}" in artifact.gpu_target
    # entries whose launches compile to the same kernel share one artifact, placed once
    assert store.served == len({e.artifacts[0].cache_key for e in compiled.entries})


@pytest.mark.parametrize(
    ("compiled_here", "said"),
    [
        ({"enable_fp_fusion": False}, "enable_fp_fusion True in the bundle, False here"),
        ({"debug": True}, "debug False in the bundle, True here"),
        ({"a_setting_set_here_only": 1}, "a_setting_set_here_only 'unset' in the bundle, 1 here"),
        ({"hash": "0" * 64, "num_warps": 8, "shared": 0}, None),  # another config or specialization
    ],
)
def test_a_kernel_compiled_here_under_other_triton_settings_than_the_bundles_says_which_once(
    compiled: model.Results,
    store: cache_manager.ArtifactStore,
    compiled_here: dict[str, Any],
    said: str | None,
) -> None:
    problems: list[str] = []
    store.on_problem = problems.append
    store.add(compiled, "test bundle")
    artifact = compiled.entries[0].artifacts[0]
    metadata_file = next(f for f in artifact.files if f.name.endswith(".json"))
    metadata = json.loads(compiled.blobs[metadata_file.sha256])
    assert (
        compiled_here.keys() - {"a_setting_set_here_only"} <= metadata.keys()
    )  # Triton's metadata has these
    recompiled = json.dumps(metadata | compiled_here).encode()
    for _ in range(2):
        store.count_compiled(metadata_file.name.removesuffix(".json"), recompiled)
    assert store.compiled_here == 2
    if said is None:
        assert problems == []
    else:
        assert len(problems) == 1 and said in problems[0] and "Triton compiles it here" in problems[0], (
            problems
        )


def test_a_corrupt_artifact_falls_back_to_compiling_with_one_warning(
    tmp_path: Path, store: cache_manager.ArtifactStore
) -> None:
    problems: list[str] = []
    store.on_problem = problems.append
    entries, blobs = [], {}
    for block in (32, 64):
        item, item_blobs = factories.with_artifact(factories.entry(block=block), payload=b"cubin %d" % block)
        entries.append(item)
        blobs.update({sha: b"flipped" for sha in item_blobs})  # every blob's bytes differ from its hash
    header = factories.results(target=factories.H100).header
    store.add(model.Results(header, tuple(entries), blobs), "bad bundle")
    for item in entries:
        manager = cache_manager.ArtifactCacheManager(
            cache_manager.triton_manager_key(item.artifacts[0].cache_key)
        )
        assert manager.get_group("k.json") is None  # Triton compiles instead
    assert len(problems) == 1 and "corrupt (sha256 differs)" in problems[0]
    assert not list(tmp_path.rglob("*.cubin"))


def _refiled(
    entry: model.Entry, blobs: Any, edit: Any, cache_key: str | None = None, warps: int = 0
) -> model.Results:
    """`entry`'s compiled kernel with its files (name -> bytes) edited by `edit`, hashed anew (so only what
    they say can give them away), filed under `cache_key` (its own by default), with `warps` in its entry's
    config (where given), alone in a bundle."""
    (artifact,) = entry.artifacts
    if warps:
        artifact = dataclasses.replace(artifact, config=dataclasses.replace(artifact.config, num_warps=warps))
    files = edit({f.name: blobs[f.sha256] for f in artifact.files})
    listed = tuple(
        model.ArtifactFile(n, hashlib.sha256(d).hexdigest(), len(d)) for n, d in sorted(files.items())
    )
    refiled = dataclasses.replace(artifact, files=listed, cache_key=cache_key or artifact.cache_key)
    header = factories.results(target=factories.H100).header
    kept = {f.sha256: files[f.name] for f in listed}
    return model.Results(header, (dataclasses.replace(entry, artifacts=(refiled,)),), kept)


def _json_edited(**fields: Any) -> Any:
    def edit(files: dict[str, bytes]) -> dict[str, bytes]:
        name = next(n for n in files if n.endswith(".json"))
        return {**files, name: json.dumps({**json.loads(files[name]), **fields}).encode()}

    return edit


def _renamed_as(other: model.Entry) -> Any:
    """Files and metadata say they are the `other` entry's kernel (the binary still holds the original)."""

    def edit(files: dict[str, bytes]) -> dict[str, bytes]:
        renamed = {f"{_name(other)}{Path(n).suffix}": d for n, d in files.items()}
        return _json_edited(name=_name(other), hash=other.artifacts[0].cache_key)(renamed)

    return edit


def _binary_replaced(files: dict[str, bytes]) -> dict[str, bytes]:
    return {
        n: b"\x7fELF" + os.urandom(200) if n.endswith((".cubin", ".hsaco")) else d for n, d in files.items()
    }


# (id, the hostile bundle made from two compiled entries of different kernels, what the warning says)
HOSTILE_COMPILED = [
    ("claims-another-kernels-key", lambda a, b, blobs: _refiled(a, blobs, lambda f: f, b.artifacts[0].cache_key),
     "filed under the cache key of"),
    ("renamed-as-another-kernel", lambda a, b, blobs: _refiled(a, blobs, _renamed_as(b),
                                                               b.artifacts[0].cache_key), "defines no function"),
    ("metadata-hash-edited", lambda a, b, blobs: _refiled(a, blobs, _json_edited(hash="ab" * 32)),
     "its metadata says cache key"),
    ("metadata-warps-edited", lambda a, b, blobs: _refiled(a, blobs, _json_edited(num_warps=32)),
     "its metadata launches 32 warps"),
    ("warps-edited-in-metadata-and-entry", lambda a, b, blobs: _refiled(a, blobs, _json_edited(num_warps=32), warps=32),
     "threads a block, its metadata launches 1024"),
    ("metadata-target-edited", lambda a, b, blobs: _refiled(
        a, blobs, _json_edited(target={"backend": "cuda", "arch": 75, "warp_size": 32})), "says target cuda:75"),
    ("metadata-not-json", lambda a, b, blobs: _refiled(
        a, blobs, lambda f: {n: b"{" if n.endswith(".json") else d for n, d in f.items()}), "cannot be read"),
    ("binary-replaced", lambda a, b, blobs: _refiled(a, blobs, _binary_replaced), "is not a GPU binary"),
]  # fmt: skip


def _name(entry: model.Entry) -> str:
    return entry.kernel.name.rsplit(".", 1)[-1]


def test_the_verbose_summary_names_the_kernels_a_served_program_compiled_itself(
    store: cache_manager.ArtifactStore,
) -> None:
    """A kernel no bundle held is stored by Triton through the manager: counted, and named at exit."""
    from tuned_kernels.registry.exit_summary import exit_summary

    for key, name in (("a" * 64, "triton_per_fused_sum_1"), ("b" * 64, "triton_poi_fused_0")):
        manager = cache_manager.ArtifactCacheManager(cache_manager.triton_manager_key(key))
        assert manager.get_group(f"{name}.json") is None  # no bundle holds it: Triton compiles
        paths = {f"{name}.{s}": str(manager.put(b"x", f"{name}.{s}")) for s in ("cubin", "json")}
        manager.put_group(f"{name}.json", paths)
    summary = {"hits": 0, "nearest": 0, "misses": 0, "misses_by_reason": {}, "configs_benchmarked": 0,
               "seconds_tuning": 0.0, "changed_kernels": {}, "selected": [{"bundle": "b.pb.zst"}],
               "overlay": {"path": "o"},
               "compiled_kernels": {"served": 6, "compiled_here": store.compiled_here,
                                    "compiled_here_names": store.compiled_here_names}}  # fmt: skip
    assert (
        "tuned-kernels: bundles: b.pb.zst; compiled kernels: 6 served from bundles, 2 compiled here "
        "(triton_per_fused_sum_1, triton_poi_fused_0)"
    ) in exit_summary(summary)


@pytest.mark.parametrize(("case", "make", "said"), HOSTILE_COMPILED, ids=[h[0] for h in HOSTILE_COMPILED])
def test_a_compiled_kernel_that_is_not_what_it_says_is_compiled_instead_with_one_warning(
    compiled: model.Results,
    tmp_path: Path,
    store: cache_manager.ArtifactStore,
    case: str,
    make: Any,
    said: str,
) -> None:
    """Triton trusts its own cache: a bundle's kernel filed under another kernel's cache key, or whose
    metadata disagrees with its entry or its binary, never reaches it (real binaries, edited and re-hashed)."""
    if case == "warps-edited-in-metadata-and-entry" and compiled.header.target.arch != "sm90":
        pytest.skip("a hsaco does not say the block size it was compiled for")
    first = compiled.entries[0]
    other = next(e for e in compiled.entries if _name(e) != _name(first))
    hostile = make(first, other, compiled.blobs)
    problems: list[str] = []
    store.on_problem = problems.append
    store.add(hostile, "hostile bundle")
    (artifact,) = hostile.entries[0].artifacts
    asked = f"{_name(other if artifact.cache_key == other.artifacts[0].cache_key else first)}.json"
    manager = cache_manager.ArtifactCacheManager(cache_manager.triton_manager_key(artifact.cache_key))
    assert manager.get_group(asked) is None  # Triton compiles it
    assert len(problems) == 1 and said in problems[0], problems
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # nothing placed in the user's cache


def test_artifact_file_names_cannot_leave_the_cache_directory(tmp_path: Path) -> None:
    item, blobs = factories.with_artifact(factories.entry())
    bad_file = model.ArtifactFile(
        "../../escape.cubin", *next((f.sha256, f.size_bytes) for f in item.artifacts[0].files)
    )
    bad = model.Artifact(item.artifacts[0].cache_key, "cuda:90:32", (bad_file,), item.best)
    results = factories.results(target=factories.H100)
    path = tmp_path / "r.textproto"
    write_results(path, model.Results(results.header, (dataclasses.replace(item, artifacts=(bad,)),), blobs))
    with pytest.raises(ResultsFormatError, match=r"files\[0\]\.name: expected a plain file name"):
        read_results(path)


NAMES_ENDING_IN_A_NEWLINE = [
    ("files[0].name", lambda a: dataclasses.replace(a, files=(dataclasses.replace(a.files[0], name="k.json\n"),
                                                               *a.files[1:]))),
    ("host_signature[0]", lambda a: dataclasses.replace(a, host_signature=("*fp32\n", "i32"))),
    ("cache_key", lambda a: dataclasses.replace(a, cache_key=a.cache_key + "\n")),
    ("gpu_target", lambda a: dataclasses.replace(a, gpu_target="cuda:90:32\n")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("field", "edit"), NAMES_ENDING_IN_A_NEWLINE, ids=[f for f, _ in NAMES_ENDING_IN_A_NEWLINE]
)
def test_a_field_that_becomes_a_name_or_code_is_refused_with_a_trailing_newline(
    tmp_path: Path, field: str, edit: Any
) -> None:
    """`$` also matches before a final newline: a file name 'k.json\\n' would reach the user's Triton cache
    folder, a host type '*fp32\\n' the launcher source Triton generates. Whole strings are matched."""
    item, blobs = factories.with_artifact(factories.entry())
    bad = edit(item.artifacts[0])
    path = tmp_path / "r.textproto"
    results = factories.results(target=factories.H100)
    write_results(path, model.Results(results.header, (dataclasses.replace(item, artifacts=(bad,)),), blobs))
    with pytest.raises(ResultsFormatError, match=rf"{re.escape(field)}: expected"):
        read_results(path)


def test_artifacts_and_their_blobs_round_trip_and_merge(tmp_path: Path) -> None:
    fast, fast_blobs = factories.with_artifact(factories.entry(time_ms=1.0), payload=b"fast")
    slow, slow_blobs = factories.with_artifact(factories.entry(time_ms=2.0), payload=b"slow")
    header = factories.results(target=factories.H100).header
    a, b = model.Results(header, (fast,), fast_blobs), model.Results(header, (slow,), slow_blobs)
    for ext in (".textproto", ".pb.zst"):
        write_results(tmp_path / f"a{ext}", a)
        assert read_results(tmp_path / f"a{ext}") == a
    merged = join(header, [b, a])
    assert merged.entries == (fast,) and dict(merged.blobs) == fast_blobs  # the loser's blobs are dropped


def test_compiled_kernels_are_served_only_for_the_exact_target_and_compiler() -> None:
    h100 = factories.results(target=factories.H100).header
    assert artifacts_fit(h100, factories.H100, factories.TRITON_39)
    sm90a = model.Target("nvidia", "sm90a")
    assert artifacts_fit(h100, sm90a, factories.TRITON_39)  # one compiler target: the same binary
    assert not artifacts_fit(h100, model.Target("nvidia", "sm80"), factories.TRITON_39)
    assert not artifacts_fit(h100, factories.H100, factories.TRITON_38)
    assert not artifacts_fit(factories.results().header, factories.CPU, factories.TRITON_39)


def test_compile_refuses_results_of_another_compiler_or_an_unrelated_target() -> None:
    from tuned_kernels.hardware import compiler_fingerprint

    old = factories.results(factories.entry(), target=factories.H100, compiler=factories.TRITON_38)
    with pytest.raises(CompileError, match=r"built with triton 3\.8\.0.*would never be used"):
        compile_results(old, "sm90", CORPUS)
    here = factories.results(
        factories.entry(), target=factories.H100, compiler=compiler_fingerprint(factories.H100)
    )
    with pytest.raises(CompileError, match="tuned for sm90; their configs do not carry over to sm80"):
        compile_results(here, "sm80", CORPUS)


def test_tune_on_the_cpu_target_says_artifacts_do_not_apply(tmp_path: Path) -> None:
    run = forked_python.run(
        [
            sys.executable,
            "-m",
            "tuned_kernels",
            "tune",
            "--corpus",
            str(ROOT / "tests/corpora/planted.py"),
            "-o",
            str(tmp_path / "r.pb"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "artifacts: do not apply to the cpu target" in run.stdout
    assert all(not e.artifacts for e in read_results(tmp_path / "r.pb").entries)


def compile_offline(script: str, tmp_path: Path) -> str:
    """The output of a tests/corpora script that compiles for a GPU target here (no interpreter)."""
    run = forked_python.run(
        [sys.executable, str(ROOT / "tests/corpora" / script)],
        env=_compiler_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def test_a_captured_winner_compiles_from_a_launchs_arguments_after_its_own_pre_hook(tmp_path: Path) -> None:
    """Capture compiles the winner from what `Autotuner.run` saw (grid and warmup included: they used to
    collide with warmup's own) and runs the winner's pre_hook first, as the launch will."""
    out = compile_offline("prehook_compile.py", tmp_path)
    assert out.split()[-1] == "[32]", out  # the hook ran once, for the config compiled


def test_configs_compiled_side_by_side_each_see_their_own_descriptor_tiles(tmp_path: Path) -> None:
    """A miss compiles its configs on threads; a pre-hook that sets the tensor descriptors' block shapes
    sets them on each compile's own copies: one kernel per config, each found again by its timing, and the
    launch's descriptor left as it was."""
    assert compile_offline("descriptor_compiles.py", tmp_path).split(maxsplit=1) == ["4", "[16, 16]\n"]


def test_capture_records_every_kernel_triton_compiles_outside_benchmarking(tmp_path: Path) -> None:
    """A plain @triton.jit kernel compiled with two constexprs is kept twice (its two specializations),
    each with the argument types its host launcher is built from; a compile made while configs are
    benchmarked is not (only a winner is kept of those)."""
    lines = compile_offline("record_compiles.py", tmp_path).split("\n")[:-1]
    assert [line.split()[:4] for line in lines] == [["fill", "cuda:90:32", "['cubin',", "'json']"]] * 2
    assert len({line.split()[-2] for line in lines}) == 2  # two cache keys: two specializations
    assert [line.split()[-1] for line in lines] == ["*fp32,i32,constexpr,constexpr"] * 2


def test_a_capture_over_a_warm_triton_cache_still_keeps_the_kernels_it_launched(tmp_path: Path) -> None:
    """The user ran the program before capturing it: each kernel is then found in Triton's cache, not
    compiled, and must be kept all the same (the bundle would otherwise make the served process compile)."""
    cold = compile_offline("record_compiles.py", tmp_path).split("\n")[:-1]
    warm = compile_offline("record_compiles.py", tmp_path).split("\n")[:-1]  # the same Triton cache
    assert warm == cold and len(warm) == 2


def _recorded(capture: Path, count: int) -> CaptureSink:
    """A capture's sink that has heard `count` compiled kernels (kernel0, kernel1, ...)."""
    sink = factories.capture_sink(capture)
    for i in range(count):
        item, blobs = factories.with_artifact(
            factories.entry(key=(i, "torch.float16")), payload=b"cubin %d" % i
        )
        sink.keep_compiled(item.artifacts[0], blobs, f"kernel{i}")
    return sink


def test_capture_writes_compiled_kernels_in_batches_not_one_rewrite_each(tmp_path: Path) -> None:
    """Inductor compiles hundreds of kernels, from several threads: each written on its own rewrote the
    capture file under its lock and serialised the compiles."""
    from tuned_kernels.registry import compiled_batch

    capture = tmp_path / "captured.pb.zst"
    sink = _recorded(capture, 3)
    assert not capture.exists()  # held until a batch is full or the program ends
    sink.flush()
    kept = read_results(capture)
    assert sorted(e.kernel.name for e in kept.entries) == [
        "compiled:kernel0",
        "compiled:kernel1",
        "compiled:kernel2",
    ]
    assert len(kept.blobs) == 4  # three binaries and their (identical) metadata, stored once
    _recorded(capture, compiled_batch.BATCH)  # a full batch is written at once, without a flush
    assert len(read_results(capture).entries) == compiled_batch.BATCH  # kernel0..2 again: the same slots


def test_compiled_kernels_held_back_are_written_when_the_program_exits(tmp_path: Path) -> None:
    capture = tmp_path / "captured.pb.zst"
    program = f"from tests.test_artifacts import _recorded; _recorded(__import__('pathlib').Path({str(capture)!r}), 2)"
    subprocess.run(
        [sys.executable, "-c", program], check=True, cwd=Path(__file__).resolve().parents[1], timeout=300
    )
    assert len(read_results(capture).entries) == 2


def _record_in_worker(sink: CaptureSink) -> None:
    item, blobs = factories.with_artifact(factories.entry(key=(99, "torch.float16")), payload=b"cubin w")
    sink.keep_compiled(item.artifacts[0], blobs, "in-worker")


def test_kernels_compiled_in_a_multiprocessing_worker_are_written_at_once(tmp_path: Path) -> None:
    """Inductor compiles the kernels it generates in forked workers, which end without running atexit: each
    kernel a worker compiles is written at once; what the parent held when it forked stays its own to write."""
    capture = tmp_path / "captured.pb.zst"
    sink = _recorded(capture, 2)  # held, not yet written
    worker = multiprocessing.get_context("fork").Process(target=_record_in_worker, args=(sink,))
    worker.start()
    worker.join()
    assert worker.exitcode == 0
    assert [e.kernel.name for e in read_results(capture).entries] == ["compiled:in-worker"]
    sink.flush()
    assert len(read_results(capture).entries) == 3


def test_compiled_kernels_are_held_to_serve_unless_turned_off(
    compiled: model.Results, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TUNED_KERNELS_COMPILED=0 serves a bundle's configs only: Triton compiles every kernel itself."""
    from tuned_kernels.registry.loading import load
    from tuned_kernels.registry.settings import Settings

    from tuned_kernels.results.discovery import open_installed

    bundle = tmp_path / "compiled.pb.zst"
    write_results(bundle, compiled)
    monkeypatch.setenv("TUNED_KERNELS_PATH", str(bundle))
    monkeypatch.setenv("TUNED_KERNELS_TARGET", compiled.header.target.arch)
    monkeypatch.setenv("TUNED_KERNELS_CACHE_DIR", str(tmp_path / "cache"))
    held = {}
    for value in ("1", "0"):
        try:
            settings = Settings.from_environ({"TUNED_KERNELS_COMPILED": value})
            held[value] = len(load(settings, open_installed(), lambda _: None).store)
        finally:
            cache_manager.uninstall()
    assert held == {"1": len({e.artifacts[0].cache_key for e in compiled.entries}), "0": 0}


def test_a_compiled_bundle_with_one_bad_entry_serves_the_rest_with_one_warning(
    compiled: model.Results, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One entry that does not decode (here an artifact file named outside its folder) is left out, said
    once, whichever path (compiled kernels, a look-up) meets it first; the bundle's other entries serve."""
    from tuned_kernels.registry.loading import load
    from tuned_kernels.registry.settings import Settings

    from tuned_kernels.results.discovery import open_installed

    first = compiled.entries[0]
    bad_file = dataclasses.replace(first.artifacts[0].files[0], name="../escape.cubin")
    bad = dataclasses.replace(first, artifacts=(dataclasses.replace(first.artifacts[0], files=(bad_file,)),))
    bundle = tmp_path / "compiled.textproto"
    write_results(bundle, compiled.with_entries((bad, *compiled.entries[1:])))
    monkeypatch.setenv("TUNED_KERNELS_PATH", str(bundle))
    monkeypatch.setenv("TUNED_KERNELS_TARGET", compiled.header.target.arch)
    monkeypatch.setenv("TUNED_KERNELS_CACHE_DIR", str(tmp_path / "cache"))
    said: list[str] = []
    try:
        loaded = load(Settings(), open_installed(), said.append)
    finally:
        cache_manager.uninstall()
    (problem,) = said
    assert "leaving out an entry" in problem and "a plain file name" in problem
    others = {e.artifacts[0].cache_key for e in compiled.entries[1:]}
    assert (
        len(loaded.store) == len(others) and list(loaded.sources.lookup(bad.slot)) == [] and said == [problem]
    )
    assert list(loaded.sources.lookup(compiled.entries[1].slot)) != []
