"""registry/: selection with reasons, hits without benchmarking, the overlay under concurrency, bad bundles."""

from __future__ import annotations

import dataclasses
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from tuned_kernels.hardware import compiler_fingerprint, target_for_arch

from tests import factories, forked_python
from tuned_kernels import model
from tuned_kernels.results import read_results, write_results
from tuned_kernels.results.overlay import add_to_overlay
from tuned_kernels.selection import BundleCandidate, select_bundles

PLANTED = str(Path(__file__).parent / "corpora" / "planted.py")


def candidate(name: str, target: model.Target, compiler: model.CompilerFingerprint) -> BundleCandidate:
    header = model.Header(target, compiler, model.Producer.TUNE, "0.1.0", "2026-11-22T00:00:00Z")
    return BundleCandidate(name, f"/b/{name}.pb", header)


def test_bundle_from_other_triton_is_rejected_with_reason() -> None:
    sel = select_bundles(
        factories.H100, factories.TRITON_39, [candidate("old", factories.H100, factories.TRITON_38)]
    )
    assert sel.selected == () and sel.stale[0].name == "old"
    assert sel.rejected[0].reason == "built with triton 3.8.0, running 3.9.0"


def test_bundle_for_other_gpu_is_rejected_with_reason() -> None:
    a100 = model.Target("nvidia", "sm80", "NVIDIA A100-SXM4-80GB")
    sel = select_bundles(factories.H100, factories.TRITON_39, [candidate("a100", a100, factories.TRITON_39)])
    assert sel.rejected[0].reason == "built for sm80, running sm90" and sel.stale == ()


@pytest.mark.parametrize(
    ("built", "running"),
    [("sm90a", "sm90"), ("sm90", "sm100"), ("sm120", "sm121"), ("gfx942", "gfx950"), ("gfx950", "gfx942")],
)
def test_a_bundle_for_a_neighbouring_arch_is_refused_naming_both(built: str, running: str) -> None:
    """Arches a cache might take for one another (a feature-set suffix, a newer minor revision, the next
    AMD generation) are other targets: a miss, with both named."""
    sel = select_bundles(
        target_for_arch(running),
        factories.TRITON_39,
        [candidate(built, target_for_arch(built), factories.TRITON_39)],
    )
    assert sel.selected == () and sel.rejected[0].reason == f"built for {built}, running {running}"


def test_exact_device_name_is_preferred_over_same_arch() -> None:
    generic = model.Target("nvidia", "sm90")
    sel = select_bundles(
        factories.H100,
        factories.TRITON_39,
        [
            candidate("generic", generic, factories.TRITON_39),
            candidate("h100", factories.H100, factories.TRITON_39),
        ],
    )
    assert [c.name for c in sel.selected] == ["h100", "generic"]


PROGRAM = """
import json, sys, warnings, torch
warnings.simplefilter("always")
sys.path.insert(0, {corpora!r})
import tuned_kernels; tuned_kernels.enable()
from planted import double
for n in {sizes!r}:
    x = torch.randn(n)
    assert torch.equal(double(x, torch.empty_like(x)), x * 2), "wrong result"
print("STATS " + json.dumps(tuned_kernels.stats()))
"""


def run_program(tmp_path: Path, sizes: tuple[int, ...], bundle: Path | None, **env: str) -> tuple[dict, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM.format(corpora=str(Path(PLANTED).parent), sizes=sizes))
    full_env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "cache"),
        "TUNED_KERNELS_PATH": str(bundle or ""),
        **env,
    }
    out = forked_python.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=full_env, cwd=tmp_path, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.split("STATS ", 1)[1]), out.stderr


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return factories.tuned_file(PLANTED, tmp_path_factory.mktemp("bundle") / "planted.pb.zst")


def test_hits_need_no_benchmarking_and_misses_are_remembered(tmp_path: Path, bundle: Path) -> None:
    stats, _ = run_program(tmp_path, (100, 300), bundle)
    assert (stats["hits"], stats["misses"], stats["configs_benchmarked"]) == (2, 0, 0)
    assert stats["selected"][0]["file"] == str(bundle)
    # 777: a shape nobody tuned, tuned where it is met (by default its config would be predicted)
    stats, _ = run_program(tmp_path, (100, 777), bundle, TUNED_KERNELS_ON_MISS="tune")
    assert (stats["hits"], stats["misses"]) == (1, 1) and stats["configs_benchmarked"] > 0
    stats, _ = run_program(tmp_path, (100, 777), bundle)  # the overlay now answers for 777
    assert (stats["hits"], stats["misses"], stats["configs_benchmarked"]) == (2, 0, 0)
    assert stats["served_from"] == {str(bundle): 1, stats["overlay"]["path"]: 1}


def test_status_shows_the_bundles_and_what_the_overlay_holds(tmp_path: Path, bundle: Path) -> None:
    run_program(tmp_path, (777, 778), bundle)  # two keys tuned into the overlay
    env = {
        **os.environ,
        "TUNED_KERNELS_PATH": str(bundle),
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "cache"),
    }
    out = forked_python.run(
        [sys.executable, "-m", "tuned_kernels", "status"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    assert f"({bundle}): 4 entries" in out and "tuned    planted.double_kernel: 2 keys" in out, out


def test_configs_a_bundle_rejected_are_never_tried_on_a_miss(tmp_path: Path, bundle: Path) -> None:
    """The planted BUG=1 config gives wrong numbers: tune recorded it as rejected, so a miss (777: a shape
    nobody tuned) benchmarks the other six and can never pick it (it used to, about one run in seven)."""
    stats, _ = run_program(tmp_path, (777,), bundle, TUNED_KERNELS_ON_MISS="tune")
    assert (stats["misses"], stats["configs_benchmarked"]) == (1, 6)


def test_nearest_policy_serves_unseen_shapes_without_benchmarking(tmp_path: Path, bundle: Path) -> None:
    stats, _ = run_program(tmp_path, (2900,), bundle, TUNED_KERNELS_ON_MISS="nearest")
    assert (stats["nearest"], stats["misses"], stats["configs_benchmarked"]) == (1, 0, 0)


def test_bundle_from_other_compiler_is_rejected_and_results_stay_correct(
    tmp_path: Path, bundle: Path
) -> None:
    results = read_results(bundle)
    old = dataclasses.replace(results.header.compiler, triton_version="3.8.0")
    foreign = tmp_path / "old.pb"
    write_results(
        foreign, dataclasses.replace(results, header=dataclasses.replace(results.header, compiler=old))
    )
    stats, stderr = run_program(tmp_path, (100,), foreign)
    import triton

    reason = f"built with triton 3.8.0, running {triton.__version__}"
    assert stats["rejected"][0]["reason"] == reason and stats["hits"] == 0
    assert len(factories.warnings_in(stderr)) == 1 and reason in stderr


def test_stale_bundle_seeds_a_short_retune(tmp_path: Path, bundle: Path) -> None:
    results = read_results(bundle)
    old = dataclasses.replace(results.header.compiler, triton_version="3.8.0")
    foreign = tmp_path / "old.pb"
    write_results(
        foreign, dataclasses.replace(results, header=dataclasses.replace(results.header, compiler=old))
    )
    full, _ = run_program(tmp_path / "a", (100,), None)
    seeded, _ = run_program(tmp_path / "b", (100,), foreign, TUNED_KERNELS_STALE="seed")
    assert 0 < seeded["configs_benchmarked"] < full["configs_benchmarked"]


@pytest.mark.parametrize("content", [b"", b"\x89PNG\r\n\x1a\nnot a bundle", b"format: 'x'"])
def test_corrupt_bundle_is_skipped_with_one_warning(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "bad.pb"
    bad.write_bytes(content)
    stats, stderr = run_program(tmp_path, (100,), bad)
    assert len(factories.warnings_in(stderr)) == 1 and "bad.pb" in stderr
    assert stats["misses"] == 1


def test_unwritable_overlay_warns_once_and_keeps_running(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    stats, stderr = run_program(tmp_path, (100, 300), None, TUNED_KERNELS_CACHE_DIR=str(blocker / "cache"))
    assert stats["misses"] == 2 and len(factories.warnings_in(stderr)) == 1


WRITER = """
import sys
from tests import factories, forked_python
from tuned_kernels.results.overlay import add_to_overlay
worker = int(sys.argv[2])
header = factories.results().header
for i in range(10):
    add_to_overlay(__import__("pathlib").Path(sys.argv[1]), header, [factories.entry(key=(worker, i))])
"""


def test_eight_processes_writing_the_overlay_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "overlay.pb"
    root = str(Path(__file__).resolve().parents[1])
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(w)], cwd=root) for w in range(8)]
    deadline = time.monotonic() + 300
    assert all(p.wait(timeout=max(1.0, deadline - time.monotonic())) == 0 for p in procs)
    keys = {e.key for e in read_results(path).entries}
    assert keys == {(w, i) for w in range(8) for i in range(10)}


# a writer that stops inside its write: the new file is written and synced, not yet renamed over the overlay
STOPPED_WRITER = """
import os, sys, pathlib
from tests import factories, forked_python
from tuned_kernels.results.overlay import add_to_overlay
def stop_here(fd):
    print("inside the write", flush=True)
    sys.stdin.read()
os.fsync = stop_here
add_to_overlay(pathlib.Path(sys.argv[1]), factories.results().header, [factories.entry(key=(1, 0))])
"""


def test_a_writer_killed_inside_its_write_loses_nothing_and_frees_the_overlay(tmp_path: Path) -> None:
    path = tmp_path / "overlay.pb"
    header = factories.results().header
    add_to_overlay(path, header, [factories.entry(key=(0, i)) for i in range(5)])
    root = str(Path(__file__).resolve().parents[1])
    writer = subprocess.Popen([sys.executable, "-c", STOPPED_WRITER, str(path)], cwd=root, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
    try:
        readable, _, _ = select.select([writer.stdout], [], [], 120)
        assert readable and writer.stdout is not None and writer.stdout.readline() == "inside the write\n"
    finally:
        writer.kill()  # SIGKILL: no handler, no atexit, the file lock held until the process is gone
        writer.wait(timeout=60)
    assert {e.key for e in read_results(path).entries} == {(0, i) for i in range(5)}
    add_to_overlay(path, header, [factories.entry(key=(2, 0))])  # the dead writer's lock is free
    assert {e.key for e in read_results(path).entries} == {(0, i) for i in range(5)} | {(2, 0)}


def test_overlay_merge_keeps_the_faster_entry(tmp_path: Path) -> None:
    path = tmp_path / "o.pb"
    header = factories.results().header
    add_to_overlay(path, header, [factories.entry(time_ms=3.0)])
    add_to_overlay(path, header, [factories.entry(block=256, time_ms=1.0)])
    (entry,) = read_results(path).entries
    assert entry.best_time_ms == 1.0


def test_the_compiler_fingerprint_is_the_same_in_every_process() -> None:
    """Bundles are matched by it across machines and processes: nothing per-process may enter it."""
    detect = [sys.executable, "-m", "tuned_kernels", "detect", "--json"]
    first, second = (
        json.loads(forked_python.run(detect, capture_output=True, text=True, check=True, timeout=300).stdout)
        for _ in range(2)
    )
    assert first["compiler"] == second["compiler"] and len(first["compiler"]["triton_hash"]) == 64


def test_the_compiler_fingerprint_names_this_triton() -> None:
    import triton

    fingerprint = compiler_fingerprint(target_for_arch("cpu"))
    assert fingerprint.triton_version == triton.__version__ and fingerprint.backend_hash != ""


@pytest.mark.parametrize(("impl", "kernel_launched"), [("torch", False), ("triton", True)])
def test_matmul_dispatches_to_the_implementation_recorded_for_its_key(
    tmp_path: Path, impl: str, kernel_launched: bool
) -> None:
    from tuned_kernels.kernels import matmul, skinny_matmul
    from tuned_kernels.triton_edge.keys import kernel_identity

    key = (16, 64, 64, "torch.float16", "torch.float16", "torch.float16")  # 16 rows: the split-K kernel's
    choice = model.Config.of({"IMPL": impl})
    tile = model.Config.of(
        {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 64, "SPLIT_K": 1}, num_warps=4, num_stages=4
    )
    target = target_for_arch("cpu")
    header = model.Header(
        target, compiler_fingerprint(target), model.Producer.TUNE, "test", "2026-11-22T00:00:00Z"
    )
    entries = (
        model.Entry(kernel_identity(matmul.MATMUL_CHOICE), key, choice, (model.Timing(choice, 1.0),)),
        model.Entry(  # its key also has the dtypes of its workspace: fp32 partial sums, int32 counters
            kernel_identity(skinny_matmul.matmul_skinny_kernel),
            (*key, "torch.float32", "torch.int32"),
            tile,
            (model.Timing(tile, 1.0),),
        ),
    )
    bundle = tmp_path / "bundle.pb"
    write_results(bundle, model.Results(header, tuple(sorted(entries, key=model.entry_sort_key))))
    program = (
        "import torch, tuned_kernels; tuned_kernels.enable()\n"
        "from tuned_kernels import ops\n"
        "a, b = torch.randn(16, 64).half(), torch.randn(64, 64).half()\n"
        "c = ops.matmul(a, b)\n"
        "assert (c.double() - a.double() @ b.double()).abs().max() < 0.05\n"
        "s = tuned_kernels.stats(); print(s['hits'], s['misses'], s['configs_benchmarked'])\n"
    )
    env = {
        **os.environ,
        "TUNED_KERNELS_PATH": str(bundle),
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay"),
    }
    out = forked_python.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert out.returncode == 0, out.stderr
    # a hit for the choice, and for the Triton kernel only when the choice launches it; nothing measured
    assert out.stdout.split() == ["2" if kernel_launched else "1", "0", "0"], out.stdout


def test_a_full_overlay_keeps_what_was_just_tuned_and_stays_bounded(tmp_path: Path) -> None:
    path = tmp_path / "o.pb"
    header = factories.results().header
    add_to_overlay(path, header, [factories.entry(key=(i, "x")) for i in range(10)], max_entries=10)
    add_to_overlay(path, header, [factories.entry(key=(99, "x"))], max_entries=10)
    keys = {e.key for e in read_results(path).entries}
    assert len(keys) == 10 and (99, "x") in keys


def test_a_full_overlay_evicts_what_was_tuned_longest_ago_not_what_sorts_last(tmp_path: Path) -> None:
    """Two programs alternating at the bound: the one whose kernel sorts last keeps what it just tuned (it
    used to lose an entry to every write of the other, and tune it again next run)."""
    path = tmp_path / "o.pb"
    header = factories.results().header
    a = [factories.entry("a.kernel", key=(i, "x")) for i in range(7)]
    z = [factories.entry("z.kernel", key=(i, "x")) for i in range(4)]
    add_to_overlay(path, header, a[:6], max_entries=10)  # program A
    add_to_overlay(path, header, z, max_entries=10)  # program B: A's oldest entries go
    add_to_overlay(path, header, a[6:], max_entries=10)  # program A again
    held = {(e.kernel.name, e.key[0]) for e in read_results(path).entries}
    assert {("z.kernel", i) for i in range(4)} <= held and ("a.kernel", 6) in held and len(held) == 10
    stamps = {(e.kernel.name, e.key[0]): e.tuned_at_ns for e in read_results(path).entries}
    assert stamps[("a.kernel", 6)] > stamps[("z.kernel", 0)] > stamps[("a.kernel", 0)] > 0


def test_a_miss_queues_its_overlay_write_and_the_writer_takes_what_queued_meanwhile_in_one_write() -> None:
    """The missing thread returns before the overlay is rewritten; entries that queue while a write is on
    go into the next one together; flush waits for all of them (or says it could not in time)."""
    from tuned_kernels.registry.overlay_writer import OverlayWriter

    started, release = threading.Event(), threading.Event()
    writes: list[tuple[list[tuple[int, ...]], bool]] = []

    def write(entries: Sequence[model.Entry], supersede: bool) -> None:
        started.set()
        assert release.wait(timeout=60)
        writes.append(([e.key for e in entries], supersede))

    writer = OverlayWriter(write)
    writer.submit(factories.entry(key=(1,)), False)
    assert started.wait(timeout=60)  # the first write is on, holding the missing thread not at all
    assert writer.flush(timeout=0.01) is False  # nothing queued, but a write still on is not written yet
    for k in (2, 3):
        writer.submit(factories.entry(key=(k,)), False)
    writer.submit(factories.entry(key=(4,)), True)
    assert writer.flush(timeout=0.01) is False and writes == []
    release.set()
    assert writer.flush(timeout=60)
    assert writes == [([(1,)], False), ([(2,), (3,)], False), ([(4,)], True)]  # in order, by flag


def test_the_overlay_writer_outlives_a_write_that_raises() -> None:
    from tuned_kernels.registry.overlay_writer import OverlayWriter

    from tuned_kernels import fallbacks

    before = fallbacks.counts().get("overlay_write", 0)
    written: list[tuple[int, ...]] = []

    def write(entries: Sequence[model.Entry], supersede: bool) -> None:
        if not written:
            written.append(())
            raise RuntimeError("a disk that went away")
        written.extend(e.key for e in entries)

    writer = OverlayWriter(write)
    writer.submit(factories.entry(key=(1,)), False)
    assert writer.flush(timeout=60)
    writer.submit(factories.entry(key=(2,)), False)
    assert writer.flush(timeout=60)
    assert written == [(), (2,)] and fallbacks.counts()["overlay_write"] == before + 1
