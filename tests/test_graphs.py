"""torch.compile's compiled graphs ship in the bundle: a program captured in one folder, by one HOME, is
served in another folder, under another name, with a fresh HOME and empty caches, and Inductor compiles no
graph (no FX-graph or AOTAutograd miss, no C++ compiled). A graph is code Inductor loads: each file is
checked before Inductor sees it, a foreign or damaged one is not served (at most one warning; Inductor
compiles), nothing in the user's own cache is replaced, and `TUNED_KERNELS_COMPILED=0` serves none.

Real processes on the CPU (Inductor's C++ back end: the same FX-graph and AOTAutograd caches as a GPU's)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import pickletools
import shutil
import subprocess
import sys
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import factories, forked_python
from tuned_kernels import internals, model
from tuned_kernels.inductor_edge import autotune_cache, graphs, shapes, source_key
from tuned_kernels.results import parse_cost, read_results, write_results
from tuned_kernels.results.files import encode_results

APP = Path(__file__).parent / "corpora" / "graph_app.py"


@dataclasses.dataclass(frozen=True)
class Served:
    graphs: dict[str, int]
    warnings: list[str]
    stderr: str
    cache: Path
    returncode: int = 0


def run_app(
    folder: Path,
    *,
    bundle: Path | None = None,
    capture: Path | None = None,
    verbose: bool = False,
    **extra: str,
) -> Served:
    """graph_app.py copied into `folder` (as `train_step.py` when served) and run there, with `folder` as
    HOME and empty Inductor, Triton and overlay caches of its own (`verbose`: the exit summary printed).
    Served, Dynamo traces (`TUNED_KERNELS_FRAMES=0`, unless given): these are the graph caches' tests, the
    saved frames' are in test_frames.py."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / ("graph_app.py" if capture else "train_step.py")
    shutil.copyfile(APP, script)
    env = factories.program_environment(folder)
    env |= {"TUNED_KERNELS_VERBOSE": "1" if verbose else "0", "TUNED_KERNELS_FRAMES": "0", **extra}
    if bundle is not None:
        env |= {"TUNED_KERNELS": "1", "TUNED_KERNELS_PATH": str(bundle)}
    command = [sys.executable, str(script)]
    if capture is not None:
        command = [sys.executable, "-m", "tuned_kernels", "capture", "-o", str(capture), "--", *command]
    done = forked_python.run(command, env=env, cwd=folder, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if done.returncode != 0:  # only TUNED_KERNELS_STRICT=1 stops a program (the tests that set it say so)
        assert extra.get("TUNED_KERNELS_STRICT") == "1", done.stderr[-3000:]
        return Served(
            {}, factories.warnings_in(done.stderr), done.stderr, folder / "inductor", done.returncode
        )
    counts = json.loads(done.stdout.split("GRAPHS ", 1)[1].splitlines()[0])  # the outputs checked vs eager
    return Served(counts, factories.warnings_in(done.stderr), done.stderr, folder / "inductor")


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bundle = tmp_path_factory.mktemp("capture") / "train.pb.zst"
    run_app(bundle.parent / "program", capture=bundle)
    return bundle


def test_capture_keeps_each_compiled_graph_with_its_cpp_objects(captured: Path) -> None:
    kinds = [
        dict(e.best.kwargs)[graphs.KIND]
        for e in read_results(captured).entries
        if e.kernel == graphs.identity()
    ]
    assert kinds.count("fxgraph") == 2 and kinds.count("aotautograd") == 1 and kinds.count("cpp") >= 2, kinds


@pytest.fixture(scope="module")
def served_elsewhere(captured: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Served, set[str]]:
    """The capture served in another folder with its summary printed, and the C++ objects its Inductor
    cache then held (read at once: a later test runs in that folder again)."""
    served = run_app(tmp_path_factory.mktemp("elsewhere") / "program", bundle=captured, verbose=True)
    return served, {p.relative_to(served.cache).as_posix() for p in served.cache.glob("*/*.so")}


def test_a_captured_graph_is_served_elsewhere_without_compiling(
    captured: Path, served_elsewhere: tuple[Served, set[str]]
) -> None:
    served, objects = served_elsewhere
    assert served.graphs == {"fxgraph_hits": 2, "fxgraph_misses": 0, "autograd_hits": 1, "autograd_misses": 0}
    summary = ("tuned-kernels: 0 hits", "tuned-kernels: bundles:", "tuned-kernels: torch.compile graphs:")
    assert len(served.warnings) == len(summary) and all(map(str.startswith, served.warnings, summary))
    shipped = {
        e.key[0] for e in read_results(captured).entries if dict(e.best.kwargs).get(graphs.KIND) == "cpp"
    }
    assert objects - shipped == set()  # every C++ object the graphs load came with them
    assert "torch.compile graphs: 2 found in Inductor's cache, 0 compiled here; bundle files" in served.stderr
    assert "; torch's source hash from the bundle" in served.stderr


def test_graphs_compiled_with_tuned_kernels_off_and_on_are_found_by_the_other(
    served_elsewhere: tuple[Served, set[str]], tmp_path: Path
) -> None:
    """Inductor's keys leave tuned-kernels' choices hook out: a machine warm from runs without tuned-kernels
    stays warm with it on, and graphs compiled with it on (a capture's, placed by a served run) are found by
    a run without it."""
    found = {"fxgraph_hits": 2, "fxgraph_misses": 0, "autograd_hits": 1, "autograd_misses": 0}
    plain = run_app(tmp_path / "warm-before", TUNED_KERNELS="0")
    assert plain.graphs["fxgraph_misses"] == 2, plain.graphs
    assert run_app(tmp_path / "warm-before", TUNED_KERNELS="1").graphs == found
    served, _ = served_elsewhere  # graphs a served run placed (compiled with tuned-kernels on)
    assert served.graphs == found
    assert run_app(served.cache.parent, TUNED_KERNELS="0").graphs == found


def with_torch_key(results: model.Results, wheel: str, key: str) -> model.Results:
    """The bundle's recorded torch source hash replaced by `key`, recorded for `wheel`."""
    entries = tuple(
        dataclasses.replace(e, key=(wheel,), best=model.Config.of({"torch_key": key}))
        if e.kernel == source_key.identity()
        else e
        for e in results.entries
    )
    return results.with_entries(entries)


def test_inductors_torch_source_hash_is_taken_from_the_bundle_for_the_wheel_it_was_recorded_for(
    captured: Path, tmp_path: Path
) -> None:
    """The capture records Inductor's hash of torch's sources for the wheel torch was installed from, and the
    install's paths; a served process installed from that wheel uses the hash (a recorded hash that differs
    makes every graph a miss), one from another wheel computes its own (every graph found)."""
    from torch._inductor.codecache import torch_key

    from tuned_kernels.inductor_edge import cpp_objects

    wheel = source_key.wheel_of(source_key.torch_package())
    assert wheel is not None  # the test environment's torch is installed from a wheel
    (recorded,) = [e for e in read_results(captured).entries if e.kernel == source_key.identity()]
    paths = {f"{source_key.PATH_PREFIX}{name}": path for name, path in cpp_objects.install_paths().items()}
    assert recorded.key == (wheel.digest,)
    assert dict(recorded.best.kwargs) == {"torch_key": torch_key().hex(), **paths}
    for name, for_wheel, found in [("this-wheel", wheel.digest, 0), ("another-wheel", "0" * 64, 2)]:
        bundle = tmp_path / f"{name}.pb.zst"
        write_results(bundle, with_torch_key(read_results(captured), for_wheel, "ab" * 32))
        served = run_app(tmp_path / name, bundle=bundle)
        assert served.graphs["fxgraph_hits"] == found, (name, served.graphs)
        assert served.warnings == [] if found else len(served.warnings) <= 1, served.warnings


def served_script(script: str, bundle: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    """`python -c script` in `folder` (its HOME), served from `bundle`, with empty Inductor and overlay caches
    of its own and two Inductor compile workers."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUNED_KERNELS", "TORCHINDUCTOR"))}
    env |= factories.suite_settings()
    env |= {"TUNED_KERNELS": "1", "TUNED_KERNELS_PATH": str(bundle), "HOME": str(folder),
            "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"), "TORCHINDUCTOR_COMPILE_THREADS": "2",
            "TUNED_KERNELS_CACHE_DIR": str(folder / "overlay")}  # fmt: skip
    return forked_python.run(
        [sys.executable, "-c", script], env=env, cwd=folder, capture_output=True, text=True, timeout=180
    )


def test_inductors_compile_workers_start_where_a_bundle_gives_the_torch_source_hash(
    captured: Path, tmp_path: Path
) -> None:
    """Inductor hands its compile workers its hash; the bundle's is not set there too (the worker would
    die setting it twice, and every graph Inductor compiles would wait for it)."""
    script = (
        "import os, torch._inductor.async_compile as a\n"
        "print('WORKER', a.AsyncCompile.process_pool().submit(os.getpid).result(timeout=120))\n"
    )
    done = served_script(script, captured, tmp_path)
    assert done.returncode == 0 and "WORKER " in done.stdout, done.stderr[-3000:]


def test_inductors_compile_workers_wait_while_graphs_are_served_and_start_when_one_compiles(
    captured: Path, tmp_path: Path
) -> None:
    """Where a bundle serves graphs, Inductor's pool start (at each compile's entry, and on a cached graph's
    kernel load) waits, and starts once Inductor compiles a graph the bundle lacks (without a bundle, the
    first of these calls starts it)."""
    script = (
        "import torch, torch._inductor.async_compile as a\n"
        "a.maybe_warm_pool(); a.AsyncCompile.wakeup(); a.AsyncCompile.use_process_pool()\n"
        "print('POOLS', len(a._pool_set))\n"
        "torch.compile(lambda x: (x * 3).cos())(torch.ones(3))  # a graph the bundle lacks\n"
        "print('POOLS', len(a._pool_set))\n"
    )
    done = served_script(script, captured, tmp_path)
    pools = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("POOLS ")]
    assert done.returncode == 0 and pools == ["0", "1"], (done.stdout, done.stderr[-3000:])


def test_a_torch_whose_files_changed_since_its_wheel_was_installed_has_no_recorded_hash(
    tmp_path: Path,
) -> None:
    """A file edited, resized, removed or added, or a second RECORD: the hash is computed, not taken."""
    site = tmp_path / "site"
    package = site / "torch"
    (package / "_inductor").mkdir(parents=True)
    source = package / "_inductor" / "codecache.py"
    source.write_text("x = 1\n")
    record = site / "torch-9.9.dist-info" / "RECORD"
    record.parent.mkdir()
    lines = ["torch/_inductor/codecache.py,sha256=abc,6", "../../../bin/torchrun,sha256=def,200",
             "torch/_inductor/__pycache__/codecache.cpython-311.pyc,,"]  # fmt: skip
    record.write_text("\n".join(lines) + "\n")
    before = record.stat().st_mtime_ns - 1
    os.utime(source, ns=(1, before))
    wheel = source_key.wheel_of(package)
    assert wheel is not None and source_key.unchanged(package, wheel)
    record.write_text("\n".join(lines[:1]) + "\n")  # another install's scripts and bytecode: the same wheel
    os.utime(source, ns=(1, record.stat().st_mtime_ns - 1))
    assert source_key.wheel_of(package) == dataclasses.replace(wheel, written_ns=record.stat().st_mtime_ns)
    wheel = source_key.wheel_of(package)
    assert wheel is not None
    os.utime(source, ns=(1, wheel.written_ns + 1))  # edited in place
    assert not source_key.unchanged(package, wheel)
    source.write_text("x = 10\n")  # another size, its time put back
    os.utime(source, ns=(1, wheel.written_ns - 1))
    assert not source_key.unchanged(package, wheel)
    source.write_text("x = 1\n")
    os.utime(source, ns=(1, wheel.written_ns - 1))
    (package / "extra.py").write_text("")  # added
    os.utime(package / "extra.py", ns=(1, wheel.written_ns - 1))
    assert not source_key.unchanged(package, wheel)
    (package / "extra.py").unlink()
    source.unlink()  # removed
    assert not source_key.unchanged(package, wheel)
    (site / "torch-9.8.dist-info").mkdir()
    shutil.copyfile(record, site / "torch-9.8.dist-info" / "RECORD")  # which one: neither
    assert source_key.wheel_of(package) is None


def test_graphs_are_not_served_with_compiled_kernels_off(captured: Path, tmp_path: Path) -> None:
    served = run_app(tmp_path / "off", bundle=captured, verbose=True, TUNED_KERNELS_COMPILED="0")
    assert served.graphs["fxgraph_misses"] == 2  # Inductor compiled both graphs, and their C++ objects:
    compiled = sorted(p.relative_to(served.cache).as_posix() for p in served.cache.glob("*/*.so"))
    (line,) = [w for w in served.warnings if w.startswith("tuned-kernels: torch.compile graphs:")]
    assert compiled and f"2 compiled here, and {len(compiled)} C++ objects ({compiled[0]}" in line, line


@pytest.mark.parametrize("then", ["bundle-removed", "compiled-off"])
def test_graphs_placed_by_one_run_are_gone_once_no_bundle_offers_them(
    captured: Path, tmp_path: Path, then: str
) -> None:
    folder, bundle = tmp_path / "served", tmp_path / "bundle" / "train.pb.zst"
    bundle.parent.mkdir()
    shutil.copyfile(captured, bundle)
    assert run_app(folder, bundle=bundle).graphs["fxgraph_hits"] == 2
    if then == "bundle-removed":
        bundle.unlink()
        later = run_app(folder, verbose=True, TUNED_KERNELS="1")
    else:
        later = run_app(folder, bundle=bundle, verbose=True, TUNED_KERNELS_COMPILED="0")
    assert later.graphs["fxgraph_hits"] == 0 and later.graphs["fxgraph_misses"] == 2, later.graphs
    assert "taken out, no bundle offers them now: " in later.stderr


def test_graphs_another_programs_bundle_placed_stay_while_that_bundle_is_there(
    captured: Path, tmp_path: Path
) -> None:
    """Two programs sharing Inductor's cache directory: one run without the other's bundle leaves its graphs."""
    folder, bundle = tmp_path / "served", tmp_path / "bundle" / "train.pb.zst"
    bundle.parent.mkdir()
    shutil.copyfile(captured, bundle)
    assert run_app(folder, bundle=bundle).graphs["fxgraph_hits"] == 2
    assert "taken out" not in run_app(folder, verbose=True, TUNED_KERNELS="1").stderr
    assert run_app(folder, bundle=bundle).graphs["fxgraph_hits"] == 2


@pytest.mark.parametrize("graphs_shipped", [True, False])
def test_strict_stops_a_program_whose_bundle_lacks_its_graph_and_lets_a_covered_one_run(
    captured: Path, tmp_path: Path, graphs_shipped: bool
) -> None:
    bundle = captured
    if not graphs_shipped:
        bundle = tmp_path / "configs-only.pb.zst"
        results = read_results(captured)
        write_results(
            bundle, results.with_entries(tuple(e for e in results.entries if e.kernel.name != graphs.NAME))
        )
    served = run_app(tmp_path / "served", bundle=bundle, TUNED_KERNELS_STRICT="1")
    if graphs_shipped:
        assert served.returncode == 0 and served.graphs["fxgraph_hits"] == 2 and served.warnings == []
    else:
        assert served.returncode == 3 and len(served.stderr.strip().splitlines()) == 1, served.stderr
        assert "TUNED_KERNELS_STRICT=1: Inductor is compiling a graph" in served.stderr


def _graph_entries(results: model.Results) -> list[model.Entry]:
    return [e for e in results.entries if e.kernel.name == graphs.NAME]


def with_graph_blobs(results: model.Results, edit: Callable[[bytes], bytes]) -> model.Results:
    """Every graph file's bytes edited, its recorded sha256 left as it was."""
    blobs = dict(results.blobs)
    for e in _graph_entries(results):
        sha = e.artifacts[0].files[0].sha256
        blobs[sha] = edit(blobs[sha])
    return dataclasses.replace(results, blobs=blobs)


def swapped(results: model.Results) -> model.Results:
    """The forward's and the backward's FX-graph entries under each other's key."""
    fx = [e for e in _graph_entries(results) if dict(e.best.kwargs)[graphs.KIND] == "fxgraph"]
    first, second = fx[0], fx[1]
    moved = {first.key: second.key, second.key: first.key}
    entries = tuple(dataclasses.replace(e, key=moved.get(e.key, e.key)) for e in results.entries)
    return results.with_entries(entries)


def rekeyed(results: model.Results, key: Callable[[str], str]) -> model.Results:
    entries = tuple(
        dataclasses.replace(e, key=(key(str(e.key[0])),)) if e.kernel.name == graphs.NAME else e
        for e in results.entries
    )
    return results.with_entries(entries)


# (id, the captured file edited, warnings): each leaves the program correct, Inductor compiling every graph
GRAPH_HOSTILE: list[tuple[str, Callable[[model.Results], model.Results], int]] = [
    ("truncated", lambda r: with_graph_blobs(r, lambda b: b[: len(b) // 2]), 1),
    ("edited", lambda r: with_graph_blobs(r, lambda b: b[:100] + bytes([b[100] ^ 1]) + b[101:]), 1),
    ("another-torch", lambda r: factories.graphs_made_with_torch(r, "2.0.0"), 1),
    ("path-out-of-the-cache", lambda r: rekeyed(r, lambda k: "../../" + k), 1),
    ("another-key", lambda r: rekeyed(r, lambda k: k.replace("/f", "/fz", 1).replace("/a", "/az", 1)), 1),
    ("swapped", swapped, 1),
]


@pytest.mark.parametrize(("name", "edit", "warned"), GRAPH_HOSTILE, ids=[h[0] for h in GRAPH_HOSTILE])
def test_a_hostile_graph_leaves_the_program_correct_and_inductor_compiling(
    captured: Path, tmp_path: Path, name: str, edit: Callable[[model.Results], model.Results], warned: int
) -> None:
    bundle = tmp_path / "hostile.pb.zst"
    write_results(bundle, edit(read_results(captured)))
    served = run_app(tmp_path / "served", bundle=bundle)
    assert served.graphs["fxgraph_hits"] == 0 and served.graphs["fxgraph_misses"] >= 2, served.graphs
    assert len(served.warnings) == warned, served.warnings
    assert not (tmp_path / "fxgraph").exists()  # nothing written outside Inductor's cache directory


def redigested(results: model.Results, edit: Callable[[bytes], bytes]) -> model.Results:
    """Every FX-graph entry's bytes edited and its sha256 made to match, as someone who could write the bundle
    (or a faulty build) would leave it: the bundle's own checks pass."""
    blobs, entries = dict(results.blobs), []
    for e in results.entries:
        if e.kernel.name == graphs.NAME and dict(e.best.kwargs)[graphs.KIND] == "fxgraph":
            (stored,) = e.artifacts[0].files
            data = edit(blobs[stored.sha256])
            sha = hashlib.sha256(data).hexdigest()
            blobs[sha] = data
            files = (dataclasses.replace(stored, sha256=sha, size_bytes=len(data)),)
            e = dataclasses.replace(e, artifacts=(dataclasses.replace(e.artifacts[0], files=files),))
        entries.append(e)
    return dataclasses.replace(results.with_entries(tuple(entries)), blobs=blobs)


def _code_that_does_not_load(entry: bytes) -> bytes:
    graph = pickle.loads(entry)  # this test's own capture
    graph.source_code = graph.source_code.replace("def call(", "def call((", 1)
    return pickle.dumps(graph)


def _a_later_module_name_flipped(entry: bytes) -> bytes:
    """A module name the entry imports after its graph object was made: unpickling stops half-way, and that
    object's __del__ fails."""
    ops = list(pickletools.genops(entry))
    late = next(
        i for i, (op, _, at) in enumerate(ops) if op.name == "STACK_GLOBAL" and at is not None and at > 100
    )
    name = next(
        o for o in reversed(ops[:late]) if o[0].name == "SHORT_BINUNICODE" and str(o[1]).startswith("torch")
    )
    at = int(name[2] or 0) + 2  # past the opcode and its length byte
    return entry[:at] + b"tprch" + entry[at + 5 :]


# (id, the FX-graph entries' edit, what the line says): damage with the digest made to match
DAMAGED_REDIGESTED: list[tuple[str, Callable[[bytes], bytes], str]] = [
    ("truncated", lambda b: b[: len(b) // 2], "damaged (not a whole pickle)"),  # refused, not placed
    (
        "a-module-name-flipped",
        lambda b: b.replace(b"torch._inductor.output_code", b"torch._inductor.outpuX_code", 1),
        "Inductor cannot load it (ModuleNotFoundError",
    ),
    (
        "a-later-module-name-flipped",
        _a_later_module_name_flipped,
        "Inductor cannot load it (ModuleNotFoundError",
    ),
    ("code-that-does-not-load", _code_that_does_not_load, "compiled graph's code does not load"),
]


@pytest.mark.parametrize(("name", "edit", "said"), DAMAGED_REDIGESTED, ids=[d[0] for d in DAMAGED_REDIGESTED])
def test_a_damaged_graph_whose_digest_matches_is_one_line_and_inductor_compiles(
    captured: Path, tmp_path: Path, name: str, edit: Callable[[bytes], bytes], said: str
) -> None:
    """A bundle this user trusts whose graph entries are damaged with their digests fixed: one line from
    tuned-kernels, none of Inductor's tracebacks, the outputs correct (run_app checks both)."""
    bundle = tmp_path / "damaged.pb.zst"
    write_results(bundle, redigested(read_results(captured), edit))
    served = run_app(tmp_path / "served", bundle=bundle)
    assert served.graphs["fxgraph_hits"] == 0 and served.graphs["fxgraph_misses"] >= 2, served.graphs
    assert len(served.warnings) == 1 and said in served.warnings[0], served.warnings
    assert "unable to load" not in served.stderr and "Exception ignored" not in served.stderr, served.stderr


def with_payload(results: model.Results, marker: Path) -> model.Results:
    """Every FX-graph entry replaced by a pickle that runs a command (creating `marker`) and then returns the
    original entry, its sha256 recomputed, as someone who could write the bundle would."""
    code = f"__import__('pathlib').Path({str(marker)!r}).touch() or __import__('pickle').loads(B)"
    return redigested(results, lambda entry: _pickled_eval(code.replace("B", repr(entry))))


def _pickled_eval(code: str) -> bytes:
    class Payload:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return eval, (code,)

    return pickle.dumps(Payload(), protocol=4)


# (id, how the bundle's folder and file are left, whether its graphs may run)
WHO_CAN_WRITE = [
    ("only-this-user", 0o700, 0o600, True),
    ("a-folder-every-user-writes", 0o777, 0o644, False),
    ("a-file-its-group-writes", 0o755, 0o664, False),
]


@pytest.mark.parametrize(
    ("name", "folder_mode", "file_mode", "runs"), WHO_CAN_WRITE, ids=[w[0] for w in WHO_CAN_WRITE]
)
def test_graphs_of_a_bundle_others_can_write_never_reach_inductor(
    captured: Path, tmp_path: Path, name: str, folder_mode: int, file_mode: int, runs: bool
) -> None:
    """Graphs are code: a bundle file someone else could have replaced serves its configs only (one line),
    and nothing of its graphs is unpickled; the same file only this user can write is served."""
    marker = tmp_path / "payload-ran"
    bundle = tmp_path / "shared" / "hostile.pb.zst"
    bundle.parent.mkdir()
    write_results(bundle, with_payload(read_results(captured), marker))
    bundle.chmod(file_mode)
    bundle.parent.chmod(folder_mode)
    served = run_app(tmp_path / "served", bundle=bundle)
    assert marker.exists() == runs
    if runs:
        assert served.graphs["fxgraph_hits"] == 2 and served.warnings == [], served.warnings
    else:
        assert served.graphs["fxgraph_hits"] == 0 and served.graphs["fxgraph_misses"] == 2, served.graphs
        assert len(served.warnings) == 1 and "serving only the configs of" in served.warnings[0]


def test_a_file_already_in_inductors_cache_is_never_replaced(captured: Path, tmp_path: Path) -> None:
    results = read_results(captured)
    entry = _graph_entries(results)[0]
    mine = tmp_path / str(entry.key[0])
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b"the user's own")
    placed = graphs.install([(e, results.blobs.get) for e in _graph_entries(results)], tmp_path)
    assert mine.read_bytes() == b"the user's own"
    assert (placed.present, placed.written, placed.refused) == (1, len(_graph_entries(results)) - 1, [])


TUNED = "0123abcd" * 8 + ".best_config"  # a name Inductor gives a kernel's tuned config


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/gone/capture/ab/TUNED", "CACHE/ab/TUNED"),  # another machine's cache directory
        ("CACHE/ab/TUNED", "CACHE/ab/TUNED"),  # this cache directory's own
        ("EXISTS/ab/TUNED", "EXISTS/ab/TUNED"),  # a file that is there is read where it is
        ("/gone/capture/../TUNED", "/gone/capture/../TUNED"),  # not a name Inductor gives
        ("CACHE/../gone/ab/TUNED", "CACHE/ab/TUNED"),  # another directory's, by way of this one
    ],
)
def test_a_tuned_config_looked_up_under_another_cache_directory_is_read_from_this_one(
    tmp_path: Path, path: str, expected: str
) -> None:
    cache, exists = tmp_path / "cache", tmp_path / "exists"
    (exists / "ab").mkdir(parents=True)
    (exists / "ab" / TUNED).write_text("{}")

    def place(text: str) -> str:
        return text.replace("CACHE", str(cache)).replace("EXISTS", str(exists)).replace("TUNED", TUNED)

    assert autotune_cache.relocated(place(path), cache) == place(expected)


@pytest.mark.parametrize("coordesc_moved_it", [False, True])
def test_a_cached_coordinate_descent_winner_marks_the_compiled_config_it_equals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, coordesc_moved_it: bool
) -> None:
    """A cached graph's kernel narrowed to a compiled config that coordinate descent kept must not run
    coordinate descent again at the first call (torch up to 2.11 drops the mark there)."""
    from torch._inductor.runtime.autotune_cache import AutotuneCache
    from torch._inductor.runtime.triton_heuristics import check_autotune_cache, hash_configs
    from triton import Config

    monkeypatch.setattr(AutotuneCache, "read_best", AutotuneCache.read_best)  # restored after the test
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # Inductor reads no autotune cache under it
    autotune_cache.mend_read_best()
    compiled = [Config({"XBLOCK": x}, num_warps=2, num_stages=1) for x in (4, 8, 16)]
    winner = Config({"XBLOCK": 32 if coordesc_moved_it else 8}, num_warps=2, num_stages=1)
    meta = {"coordinate_descent_tuning": True, "autotune_local_cache": True}
    kernel = tmp_path / "ab" / f"cab{'0' * 49}.py"  # where Inductor writes a generated kernel's module
    kernel.parent.mkdir()
    kernel.write_text("")

    saved = AutotuneCache.create(meta, str(kernel), hash_configs(compiled))
    assert saved is not None
    saved.save(winner, 5_000_000, found_by_coordesc=True)  # as coordinate descent saves its winner

    (best,), _, _ = check_autotune_cache(compiled, str(kernel), meta)  # as a cached graph's kernel rechecks
    assert best.kwargs == winner.kwargs and best.found_by_coordesc
    marked = [c.kwargs["XBLOCK"] for c in compiled if getattr(c, "found_by_coordesc", False)]
    assert marked == ([] if coordesc_moved_it else [8])


def test_a_served_kernel_tuned_again_saves_its_config_in_this_cache_not_the_capturing_machines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel brought with a graph saves through the autotune cache it was compiled with, whose path is in
    the capturing process's cache directory: a config tuned here (one the bundle lacked) is written in this
    process's cache directory, where the next look-up reads it, and the capture's folder is not made here."""
    from torch._inductor.runtime.autotune_cache import AutotuneCache
    from torch._inductor.runtime.triton_heuristics import check_autotune_cache, hash_configs
    from triton import Config

    monkeypatch.setattr(AutotuneCache, "read_best", AutotuneCache.read_best)  # restored after the test
    monkeypatch.setattr(AutotuneCache, "save", AutotuneCache.save)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # Inductor reads no autotune cache under it
    configs = [Config({"XBLOCK": x}, num_warps=2, num_stages=1) for x in (4, 8)]
    meta = {"coordinate_descent_tuning": True, "autotune_local_cache": True}
    name = Path("ab") / f"cab{'0' * 49}.py"
    capturing = tmp_path / "capturing"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(capturing))
    (capturing / name).parent.mkdir(parents=True)
    hook = AutotuneCache.create(meta, str(capturing / name), hash_configs(configs))  # pickled with the graph
    assert hook is not None
    shutil.rmtree(capturing)  # served on another machine
    here = tmp_path / "here"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(here))
    autotune_cache.mend_read_best()

    hook.save(configs[1], 5_000_000, found_by_coordesc=True)  # coordinate descent ran here after all

    assert not capturing.exists()
    assert [p.relative_to(here).parent for p in here.glob("*/*.best_config")] == [name.parent]
    (best,), _, _ = check_autotune_cache(configs, str(capturing / name), meta)  # the next process's look-up
    assert best.kwargs == {"XBLOCK": 8} and best.found_by_coordesc


class CompiledKernel:
    """What `recheck_autotune_cache` reads of a kernel a cached graph brought compiled: its compiled configs,
    its module, its meta; compiling a config records it (a config marked so fails to compile)."""

    def __init__(self, configs: list[Any], module: Path, meta: dict[str, Any]) -> None:
        self.compile_results = [types.SimpleNamespace(config=c) for c in configs]
        self.filename, self.inductor_meta = str(module), meta
        self.fn = types.SimpleNamespace(fn=object())
        self.compiled: list[Any] = []

    def _precompile_config(self, config: Any) -> Any:
        if config.kwargs.get("XBLOCK") == 64:
            raise RuntimeError("out of resources")
        self.compiled.append(config)
        return types.SimpleNamespace(config=config)


@pytest.mark.parametrize("winner_block", [8, 32, 64])
def test_a_cached_graphs_one_config_kernel_runs_the_stored_winner_and_no_coordinate_descent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, winner_block: int
) -> None:
    """A persistent reduction generated with one config, whose coordinate descent kept another: loaded
    compiled from a cached graph, it runs the stored winner, marked as coordinate descent's (compiled here
    where it is not the compiled one), as later torch does (torch up to 2.11 kept the untuned config and ran
    coordinate descent again). A stored config that does not compile leaves the kernel as it was, said once."""
    from torch._inductor.runtime import triton_heuristics
    from torch._inductor.runtime.autotune_cache import AutotuneCache
    from triton import Config

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # Inductor reads no autotune cache under it
    start = Config({"XBLOCK": 8}, num_warps=2, num_stages=1)
    winner = Config({"XBLOCK": winner_block}, num_warps=2, num_stages=1)
    meta = {"coordinate_descent_tuning": True, "autotune_local_cache": True}
    module = tmp_path / "ab" / f"cab{'0' * 49}.py"
    module.parent.mkdir()
    module.write_text("")
    saved = AutotuneCache.create(meta, str(module), triton_heuristics.hash_configs([start]))
    assert saved is not None
    saved.save(winner, 5_000_000, found_by_coordesc=True)
    kernel = CompiledKernel([start], module, meta)

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        autotune_cache.recheck_autotune_cache(kernel, lambda: pytest.fail("reloaded"), triton_heuristics)

    (running,) = kernel.compile_results
    if winner_block == 64:  # does not compile
        assert running.config is start and not getattr(start, "found_by_coordesc", False)
        assert [str(w.message) for w in said] == [
            f"tuned-kernels: a stored config of {module.name} does not compile (RuntimeError); "
            "Inductor tunes that kernel as usual"
        ]
        return
    assert running.config.kwargs == winner.kwargs and running.config.found_by_coordesc  # no descent at launch
    assert len(kernel.compiled) == (winner_block != 8) and not said


def test_the_recheck_is_mended_only_on_a_torch_that_skips_one_config_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torch._inductor.runtime import triton_heuristics

    autotuner = triton_heuristics.CachingAutotuner
    monkeypatch.setattr(autotuner, "recheck_autotune_cache", autotuner.recheck_autotune_cache)
    here = autotuner.recheck_autotune_cache
    autotune_cache.mend_static_recheck()
    assert autotuner.recheck_autotune_cache is here  # this torch acts on the stored config itself

    def as_torch_2_11(self: Any, reload_kernel_from_src: Any) -> None:
        configs = [result.config for result in self.compile_results]
        cached_configs, _, _ = triton_heuristics.check_autotune_cache(configs, self.filename, {})
        if len(cached_configs) == 1 and len(configs) > 1:
            self.compile_results = self.compile_results[:1]

    monkeypatch.setattr(autotuner, "recheck_autotune_cache", as_torch_2_11)
    autotune_cache.mend_static_recheck()
    assert getattr(autotuner.recheck_autotune_cache, "mended", False)
    assert internals.holds(shapes.INDUCTOR_STATIC_RECHECK)  # mended, its shape still reads as torch's


def test_a_blobs_contents_count_as_one_element_when_a_file_is_read(tmp_path: Path, captured: Path) -> None:
    """A bundle of compiled graphs is mostly machine code and pickles, whose bytes often look like the
    starts of elements: they are counted as the one value each is, so a real bundle reads, while the bound
    still holds for what the parser does build."""
    results = read_results(captured)
    noise = bytes((i * 37) & 0xFF for i in range(4 << 20))  # every byte value, a tag every 28 bytes or so
    sha = hashlib.sha256(noise).hexdigest()
    entry = _graph_entries(results)[0]
    artifact = dataclasses.replace(entry.artifacts[0], files=(model.ArtifactFile("noise", sha, len(noise)),))
    big = results.with_entries(
        (
            *results.entries,
            dataclasses.replace(entry, key=("fxgraph/zz/f" + "z" * 51 + "/n",), artifacts=(artifact,)),
        )
    )
    big = dataclasses.replace(big, blobs={**big.blobs, sha: noise})
    raw = encode_results(big, "x.pb")
    assert parse_cost.tag_bytes(raw) > 100_000 > parse_cost.binary_elements(raw)
    write_results(tmp_path / "big.pb.zst", big)
    assert len(read_results(tmp_path / "big.pb.zst").entries) == len(big.entries)


@dataclasses.dataclass
class GraphEntry:
    """What an FX-graph entry holds that capture trims: the generated code and the kernels bundled with it."""

    source_code: str
    _triton_bundle: object
    _fx_graph_cache_key: str = "fabc"


def test_a_captured_graph_ships_the_kernels_its_code_launches_not_every_candidate() -> None:
    from torch._inductor.triton_bundler import TritonBundle, TritonKernelArtifact, TritonKernelArtifacts

    def compiled(name: str, config: int) -> TritonKernelArtifacts:
        files = [f"{name}.cubin", f"{name}.json", f"__grp__{name}.json"]
        return TritonKernelArtifacts(
            f"{name}-{config}", 0, [TritonKernelArtifact(f, b"x" * 100) for f in files]
        )

    source = "triton_poi_fused_0 = async_compile.triton('triton_poi_fused_0', '''...''')\n" + (
        "triton_tem_fused_mm_1 = async_compile.triton('triton_tem_fused_mm_1', '''...''')\n"
    )
    launched = [
        compiled("triton_poi_fused_0", 0),
        compiled("triton_poi_fused_0", 1),
        compiled("triton_tem_fused_mm_1", 0),
    ]
    candidates = [compiled("triton_mm", c) for c in range(40)]  # benchmarked while the graph compiled
    entry = pickle.dumps(GraphEntry(source, TritonBundle([*candidates, *launched], [])))
    trimmed = pickle.loads(graphs.launched_only(entry))
    assert [k.kernel_hash for k in trimmed._triton_bundle.kernel_artifacts] == [
        k.kernel_hash for k in launched
    ]
    assert trimmed.source_code == source and trimmed._fx_graph_cache_key == "fabc"
    assert graphs.launched_only(b"not a pickle") == b"not a pickle"  # anything unexpected ships as it was
    # what inspect counts, by kernel name, from the pickle's strings: shipped compiled, defined by the code
    assert graphs.triton_kernels(entry) == (3, 2)
    assert graphs.triton_kernels(graphs.launched_only(entry)) == (2, 2)
    assert graphs.triton_kernels(entry[: len(entry) // 2]) == (0, 0)


@pytest.mark.parametrize("how", ["pickled", "copied"])
def test_a_coordinate_descent_winner_keeps_its_mark_when_it_comes_back_from_a_compile_worker(
    monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Inductor's compile workers read a kernel's `.best_config` and mark the winner; the autotuner comes
    back to the program pickled. Without the mark the program runs coordinate descent again."""
    import copy

    from triton import Config

    monkeypatch.setattr(Config, "__setstate__", Config.__setstate__)  # restored after the test
    winner = Config({"XBLOCK": 8}, num_warps=2, num_stages=1)
    winner.found_by_coordesc = True  # type: ignore[attr-defined]
    plain = Config({"XBLOCK": 8}, num_warps=2, num_stages=1)

    def back(config: Config) -> Config:
        return pickle.loads(pickle.dumps(config)) if how == "pickled" else copy.deepcopy(config)

    autotune_cache.keep_coordesc_mark_through_pickling()
    assert getattr(back(winner), "found_by_coordesc", False) is True
    assert not getattr(back(plain), "found_by_coordesc", False)
    assert back(winner).kwargs == {"XBLOCK": 8} and back(winner).num_warps == 2


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bytes, str]]:
    """Two publishers' key pairs: the one the serving machine trusts, and another."""
    from tuned_kernels.signing import new_key_pair

    return {"trusted": new_key_pair(), "other": new_key_pair()}


def _sign(bundle: Path, private: bytes) -> None:
    from tuned_kernels.results.digests import digest_of
    from tuned_kernels.signing import SUFFIX, sign

    size, sha256 = digest_of(bundle)
    Path(f"{bundle}{SUFFIX}").write_text(sign(bundle.name, size, sha256, private).to_json())


def _edit_signature(bundle: Path) -> None:
    sig = Path(f"{bundle}.sig")
    data = json.loads(sig.read_text())
    data["signature"] = data["signature"][::-1]
    sig.write_text(json.dumps(data))


# (id, how the bundle is signed and then changed, whether its graphs may run, what is said)
SIGNED = [
    ("signed-by-a-trusted-key", "trusted", None, True, ""),
    ("signed-by-another-key", "other", None, False, "a key TUNED_KERNELS_TRUSTED_KEYS does not name"),
    ("unsigned", None, None, False, "not signed"),
    ("one-blob-changed-since", "trusted", "blob", False, "the file changed since it was signed"),
    ("signature-edited", "trusted", "signature", False, "its signature does not verify"),
    ("renamed-since", "trusted", "rename", False, "not this file"),
]


SERVED_BY_A_PROGRAM = {"signed-by-a-trusted-key", "signed-by-another-key", "one-blob-changed-since"}


@pytest.mark.parametrize(("name", "signer", "change", "runs", "said"), SIGNED, ids=[c[0] for c in SIGNED])
def test_with_trusted_keys_set_only_a_bundle_they_signed_unchanged_serves_code(
    captured: Path,
    tmp_path: Path,
    keys: dict[str, tuple[bytes, str]],
    name: str,
    signer: str | None,
    change: str | None,
    runs: bool,
    said: str,
) -> None:
    bundle = tmp_path / "bundles" / "train.pb.zst"
    bundle.parent.mkdir()
    shutil.copyfile(captured, bundle)
    if signer is not None:
        _sign(bundle, keys[signer][0])
    if change == "blob":  # one graph file's bytes edited, its digest recomputed: a well-formed bundle
        results = read_results(bundle)
        entry = next(e for e in _graph_entries(results) if dict(e.best.kwargs)[graphs.KIND] == "fxgraph")
        write_results(bundle, with_payload(results.with_entries((entry,)), tmp_path / "never"))
    elif change == "signature":
        _edit_signature(bundle)
    elif change == "rename":
        bundle.rename(bundle.with_name("other.pb.zst"))
        Path(f"{bundle}.sig").rename(bundle.with_name("other.pb.zst.sig"))
        bundle = bundle.with_name("other.pb.zst")
    if name in SERVED_BY_A_PROGRAM:  # the others meet the same gate; `verify` checks them alone
        served = run_app(tmp_path / "served", bundle=bundle, TUNED_KERNELS_TRUSTED_KEYS=keys["trusted"][1])
        assert (served.graphs["fxgraph_hits"] == 2) == runs, served.graphs
        assert not (tmp_path / "never").exists()
        if runs:
            assert served.warnings == []
        else:
            (warned,) = served.warnings
            assert "serving only the configs of" in warned and said in warned, warned
    verified = forked_python.run(
        [sys.executable, "-m", "tuned_kernels", "verify", "--key", keys["trusted"][1], str(bundle)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert (verified.returncode == 0) == runs, verified.stderr
    assert len(verified.stderr.strip().splitlines()) == (0 if runs else 1), verified.stderr
    assert name in SERVED_BY_A_PROGRAM or said in verified.stderr, verified.stderr


def test_a_graph_file_over_the_size_bound_is_refused_as_too_large(
    captured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = read_results(captured)
    entry = _graph_entries(results)[0]
    size = entry.artifacts[0].files[0].size_bytes
    monkeypatch.setattr(graphs, "MAX_FILE_BYTES", size - 1)
    assert graphs.why_not_placed(entry, results.blobs.get) == (
        f"{entry.key[0]}: {size} bytes, over the {(size - 1) >> 20} MiB a graph file may hold"
    )


@pytest.mark.parametrize("key", ["../../escaped.py", "fxgraph/../../../escaped.py", "/tmp/escaped.py"])
def test_an_entry_keyed_by_no_path_inductors_caches_use_is_never_placed_even_naming_no_kind(key: str) -> None:
    """An entry whose key is no Inductor cache path is refused by its key alone: one that names no kind,
    with one well-formed file of its key's name, would otherwise pass the kind check (none == none) and be
    written where its key points, outside the cache."""
    data = b"print('written outside the cache')\n"
    sha = hashlib.sha256(data).hexdigest()
    files = (model.ArtifactFile(key.rsplit("/", 1)[-1], sha, len(data)),)
    entry = model.Entry(
        graphs.identity(), (key,), model.Config.of({}), found_by=model.FoundBy.CAPTURED,
        artifacts=(model.Artifact(sha, "cpu", files, model.Config.of({})),),
    )  # fmt: skip
    assert graphs.why_not_placed(entry, {sha: data}.get) == (
        f"key {str(entry.key)[:80]} is not a path Inductor's caches use"
    )


def test_a_compile_command_from_another_install_names_the_captures_paths_and_nothing_else() -> None:
    """Where torch is installed from the same wheel at another path, Inductor's C++ objects are looked up
    under the name the capture's paths give them: its command with this install's paths, and those alone,
    replaced by the capture's (a path inside another replaced once, as the longer one)."""
    from tuned_kernels.inductor_edge.cpp_objects import translated

    here = {"torch": "/env2/lib/site-packages/torch", "include": "/py/include", "libdir": "/py/lib"}
    there = {"torch": "/env1/lib/site-packages/torch", "include": "/py/include", "libdir": "/py/lib"}
    command = (
        "g++ -I/py/include -I/env2/lib/site-packages/torch/include -L/env2/lib/site-packages/torch/lib -mavx2"
    )
    assert translated(command, here, there) == (
        "g++ -I/py/include -I/env1/lib/site-packages/torch/include -L/env1/lib/site-packages/torch/lib -mavx2"
    )
    assert translated(command, here, here) == command
    assert translated("-L/py/lib64 -L/py/lib", here, {**there, "libdir": "/other/lib"}) == (
        "-L/py/lib64 -L/other/lib"  # a path that only begins as another is not that path
    )
    nested_here = {"torch": "/p/lib/torch", "include": "/p", "libdir": "/p/lib"}
    nested_there = {"torch": "/q/lib/torch", "include": "/r", "libdir": "/q/lib"}
    assert translated("-I/p/lib/torch/include -I/p -L/p/lib", nested_here, nested_there) == (
        "-I/q/lib/torch/include -I/r -L/q/lib"
    )


@pytest.mark.parametrize(
    ("case", "copied"),
    [
        ("the bundle's object", True),
        ("bytes other than the bundle offered", False),
        ("an object no bundle offered", False),
        ("this install's object already there", False),
        ("a kernel's separate source", False),
    ],
)
def test_an_object_named_by_the_captures_install_paths_is_used_only_as_the_bundle_offered_it(
    case: str, copied: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Torch installed at another path than the capture's: the C++ object Inductor names is written from the
    one the capture's paths name, where a bundle offered that one with those bytes and this one is missing."""
    from torch._inductor import codecache

    from tuned_kernels.inductor_edge import cpp_objects

    monkeypatch.setattr(codecache, "write", codecache.write)  # restored after the test
    monkeypatch.setattr(cpp_objects, "_copied", set())  # this test's copies alone
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    here = cpp_objects.install_paths()
    there = {**here, "torch": "/elsewhere/site-packages/torch"}
    extension = "optimized.cpp" if case == "a kernel's separate source" else "main.cpp"
    source, command = 'extern "C" void kernel() {}', f"g++ -I{here['torch']}/include -o o.so"
    key = codecache.get_hash(source, cpp_objects.translated(command, here, there), "code")
    captured = Path(codecache.get_path(key, extension)[2][: -len("cpp")] + "so")
    captured.parent.mkdir(parents=True)
    captured.write_bytes(b"the bundle's object")
    sha = hashlib.sha256(b"the bundle's object" if case != "bytes other than the bundle offered" else b"x")
    offered = {} if case == "an object no bundle offered" else {
        captured.relative_to(tmp_path).as_posix(): sha.hexdigest()
    }  # fmt: skip
    cpp_objects.find_under_captured_paths(there, offered or {"other/object.so": "0" * 64})
    ours = Path(
        codecache.get_path(codecache.get_hash(source, command, "code"), extension)[2][: -len("cpp")] + "so"
    )
    if case == "this install's object already there":
        ours.parent.mkdir(parents=True, exist_ok=True)
        ours.write_bytes(b"compiled here")

    codecache.write(source, extension, extra=command)

    expected = {True: b"the bundle's object", False: b"compiled here" if ours.exists() else None}[copied]
    assert (ours.read_bytes() if ours.exists() else None) == expected
    assert (ours.relative_to(tmp_path).as_posix() in cpp_objects.copied()) == copied
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()]  # no temporary file left
