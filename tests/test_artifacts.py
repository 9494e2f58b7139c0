"""Compiled kernels: `tune` keeps the winners', `compile` fills them in on a machine without the GPU, bundles
carry them content-addressed, and the registry serves them to Triton's cache so a hit compiles nothing."""

from __future__ import annotations

import dataclasses
import hashlib
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

from tests import factories
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
    run = subprocess.run(
        [sys.executable, "-m", "tuned_kernels", "compile", str(untuned), "--target", arch, "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert f"compiled {len(kernel_keys(read_results(untuned)))} kernels for {arch}" in run.stdout, run.stdout
    return read_results(out)


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
    compiled: model.Results, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from triton.compiler.compiler import CompiledKernel
    from triton.runtime.cache import FileCacheManager

    store = cache_manager.ArtifactStore()
    monkeypatch.setattr(cache_manager.ArtifactCacheManager, "store", store)
    monkeypatch.setattr(cache_manager.ArtifactCacheManager, "inner_class", FileCacheManager)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
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


def test_a_corrupt_artifact_falls_back_to_compiling_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from triton.runtime.cache import FileCacheManager

    store = cache_manager.ArtifactStore()
    monkeypatch.setattr(cache_manager.ArtifactCacheManager, "store", store)
    monkeypatch.setattr(cache_manager.ArtifactCacheManager, "inner_class", FileCacheManager)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
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
    run = subprocess.run(
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
    run = subprocess.run(
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


def test_capture_records_every_kernel_triton_compiles_outside_benchmarking(tmp_path: Path) -> None:
    """A plain @triton.jit kernel compiled with two constexprs is kept twice (its two specializations),
    each with the argument types its host launcher is built from; a compile made while configs are
    benchmarked is not (only a winner is kept of those)."""
    lines = compile_offline("record_compiles.py", tmp_path).split("\n")[:-1]
    assert [line.split()[:4] for line in lines] == [["fill", "cuda:90:32", "['cubin',", "'json']"]] * 2
    assert len({line.split()[-2] for line in lines}) == 2  # two cache keys: two specializations
    assert [line.split()[-1] for line in lines] == ["*fp32,i32,constexpr,constexpr"] * 2


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
