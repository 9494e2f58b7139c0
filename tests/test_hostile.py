"""A bundle is untrusted input: each hostile file below is installed as the only bundle of a real program
(an autotuned kernel under Triton's interpreter), which must exit 0 with correct
outputs, print at most one short warning and no traceback, and stay within 200 MB of the memory the same
program needs without it. The CLI is held to the same bar on bad arguments: one line, non-zero exit,
nothing of the user's deleted."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard

from benchmarks import refusal
from tests import factories, forked_python
from tuned_kernels import model
from tuned_kernels.errors import ResultsFormatError
from tuned_kernels.inductor_edge import graphs
from tuned_kernels.results import read_results, write_results
from tuned_kernels.results.files import encode_results

CORPORA = Path(__file__).parent / "corpora"
DOUBLING = str(CORPORA / "doubling.py")
MEMORY_BOUND_KB = 200 * 1024
PROGRAM = r"""
import json, re, sys, warnings, torch
warnings.simplefilter("always")
sys.path.insert(0, {corpora!r})
import tuned_kernels; tuned_kernels.enable()
from doubling import double
for n in (100, 300):
    x = torch.randn(n)
    assert torch.equal(double(x, torch.empty_like(x)), x * 2), "wrong result"
stats = tuned_kernels.stats()
# this process's own peak (ru_maxrss would include the test process's, inherited across exec)
stats["max_rss_kb"] = int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1))
print("STATS " + json.dumps(stats))
"""


@dataclasses.dataclass(frozen=True)
class Run:
    stats: dict
    warnings: list[str]
    stderr: str


def run_program(
    tmp_path: Path, bundle: Path | None, cache: Path | None = None, site: Path | None = None
) -> Run:
    """The program with `bundle` on TUNED_KERNELS_PATH and the packages installed in `site` importable."""
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM.format(corpora=str(CORPORA)))
    env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "TUNED_KERNELS_CACHE_DIR": str(cache or tmp_path / "cache"),
        "TUNED_KERNELS_PATH": str(bundle or ""),
    }
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH", "")]))
    out = forked_python.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    warned = factories.warnings_in(out.stderr)
    return Run(json.loads(out.stdout.split("STATS ", 1)[1]), warned, out.stderr)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> model.Results:
    return read_results(factories.tuned_file(DOUBLING, tmp_path_factory.mktemp("tuned") / "doubling.pb"))


@pytest.fixture(scope="module")
def baseline_rss_kb(tmp_path_factory: pytest.TempPathFactory) -> int:
    return int(run_program(tmp_path_factory.mktemp("baseline"), None).stats["max_rss_kb"])


def _launch_of(config: model.Config, **launch: int) -> dict:
    return {"num_warps": config.num_warps, "num_stages": config.num_stages, **launch}


def edit_best(results: model.Results, edit: Callable[[dict], dict], **launch: int) -> model.Results:
    def edited(entry: model.Entry) -> model.Entry:
        best = model.Config.of(edit(dict(entry.best.kwargs)), **_launch_of(entry.best, **launch))
        return dataclasses.replace(entry, best=best, timings=(model.Timing(best, 0.001),))

    return results.with_entries(tuple(edited(e) for e in results.entries))


def text_of(results: model.Results) -> bytes:
    return encode_results(results, "x.textproto")


def zst(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=3).compress(data)


def empty_entries_bomb(results: model.Results) -> bytes:
    """A valid envelope whose payload is mostly empty entries: ~2 bytes each on the wire, ~75 in memory."""
    from tuned_kernels.results import results_pb2 as pb

    payload = encode_results(results, "x.pb")
    envelope = pb.ResultsEnvelope()
    envelope.ParseFromString(payload)
    inner = envelope.payload + b"\x1a\x00" * (32 << 20)
    envelope.payload = inner
    envelope.sha256 = __import__("hashlib").sha256(inner).digest()
    return zst(envelope.SerializeToString())


# (id, file name, its bytes made from the tuned results): every one is refused, with one short warning
HOSTILE: list[tuple[str, str, Callable[[model.Results], bytes]]] = [
    # what `inspect` refuses is not served either
    (
        "blob-not-named-by-a-sha256",
        "b.textproto",
        lambda r: text_of(r) + b'blobs { key: "../x" value: "a" }\n',
    ),
    (
        "two-entries-for-one-key",
        "b.pb",
        lambda r: encode_results(dataclasses.replace(r, entries=(*r.entries, r.entries[0])), "b.pb"),
    ),
    ("edited-value", "b.textproto", lambda r: text_of(edit_best(r, lambda k: {**k, "BLOCK": -64}))),
    (
        "value-not-in-space",
        "b.pb",
        lambda r: encode_results(edit_best(r, lambda k: {**k, "BLOCK": 128}), "b.pb"),
    ),
    ("foreign-name", "b.textproto", lambda r: text_of(edit_best(r, lambda k: {"n": k["BLOCK"], "BUG": 0}))),
    ("unknown-name", "b.textproto", lambda r: text_of(edit_best(r, lambda k: {**k, "EVIL": 1}))),
    ("wrong-type", "b.textproto", lambda r: text_of(edit_best(r, lambda k: {**k, "BLOCK": "32"}))),
    ("float-value", "b.textproto", lambda r: text_of(edit_best(r, lambda k: {**k, "BLOCK": 32.5}))),
    ("launch-option", "b.textproto", lambda r: text_of(edit_best(r, lambda k: k, num_warps=64))),
    (
        "schema-from-the-future",
        "b.textproto",
        lambda r: text_of(r).replace(b"schema_version: 2", b"schema_version: 99"),
    ),
    ("truncated", "b.pb.zst", lambda r: encode_results(r, "b.pb.zst")[:-20]),
    ("bit-flip", "b.pb", lambda r: bytes(b ^ (i == 200) for i, b in enumerate(encode_results(r, "b.pb")))),
    ("swapped-index-v1", "b.pb", lambda r: edited_payload(r, _reverse_index, packed=False)),
    ("swapped-index", "b.pb", lambda r: edited_payload(r, _reverse_packed_index)),
    ("entry-ends-past-the-entries", "b.pb", lambda r: edited_payload(r, _end_past_the_entries)),
    (
        "entry-ends-ragged",
        "b.pb",
        lambda r: edited_payload(r, lambda m: setattr(m, "entry_ends", m.entry_ends[:-1])),
    ),
    ("entries-packed-and-repeated", "b.pb", lambda r: edited_payload(r, _both_packed_and_repeated)),
    (
        "packed-entry-garbage",
        "b.pb",
        lambda r: edited_payload(r, lambda m: setattr(m, "packed_entries", b"\xff" * len(m.packed_entries))),
    ),
    ("zstd-bomb-of-empty-entries", "b.pb.zst", empty_entries_bomb),
    ("text-bomb-of-comments", "b.textproto.zst", lambda r: zst(b"# x\n" * (16 << 20) + text_of(r))),
    ("text-deep-nesting", "b.textproto", lambda r: b"header { target " + b"{ " * 100_000),
    ("not-zstd", "b.pb.zst", lambda r: b"\x28\xb5\x2f\xfd" + os.urandom(4000)),
    ("artifact-path-trick", "b.textproto", lambda r: artifact_named(r, "../../escape.cubin")),
    (
        "launcher-code-in-a-type",
        "b.textproto",
        lambda r: artifact_named(r, "k.cubin", 'i32 a){system("id");}'),
    ),
    ("file-name-ending-in-a-newline", "b.textproto", lambda r: artifact_named(r, "k.cubin\n")),
    ("type-ending-in-a-newline", "b.textproto", lambda r: artifact_named(r, "k.cubin", "*fp32\n")),
    ("binary-as-text", "b.txt", lambda r: encode_results(r, "b.pb.zst")),
    ("zlib-not-zstd", "b.pb.zst", lambda r: zlib.compress(encode_results(r, "b.pb"))),
]


def edited_payload(results: model.Results, edit: Callable[[Any], None], packed: bool = True) -> bytes:
    """A binary file of `results` whose payload `edit` changed, with a checksum that matches the edit (the
    file looks intact: only the reader's own checks can catch it)."""
    from tuned_kernels.results import codec
    from tuned_kernels.results import results_pb2 as pb

    msg = codec.results_to_pb(results, packed=packed)
    if not packed:  # schema v1: a repeated field of entries beside a repeated index
        msg.index.extend(model.slot_digest(e.slot) for e in results.entries)
    edit(msg)
    payload = msg.SerializeToString(deterministic=True)
    envelope = pb.ResultsEnvelope(
        format=codec.FORMAT_NAME,
        schema_version=msg.header.schema_version,
        payload=payload,
        sha256=__import__("hashlib").sha256(payload).digest(),
    )
    return envelope.SerializeToString()


def _reverse_index(msg: Any) -> None:
    index = list(msg.index)
    del msg.index[:]
    msg.index.extend(index[::-1])


def _reverse_packed_index(msg: Any) -> None:
    digests = [msg.packed_index[i : i + 16] for i in range(0, len(msg.packed_index), 16)]
    msg.packed_index = b"".join(digests[::-1])


def _end_past_the_entries(msg: Any) -> None:
    msg.entry_ends = msg.entry_ends[:-4] + (1 << 31).to_bytes(4, "little")


def _both_packed_and_repeated(msg: Any) -> None:
    from tuned_kernels.results import results_pb2 as pb

    msg.entries.append(
        pb.Entry.FromString(msg.packed_entries[: int.from_bytes(msg.entry_ends[:4], "little")])
    )


def artifact_named(results: model.Results, name: str, argument_type: str = "*fp32") -> bytes:
    """The first entry with a compiled kernel whose file is `name` and whose host launcher takes one
    argument of `argument_type`."""
    entry = results.entries[0]
    file = model.ArtifactFile(name, "b" * 64, 1)
    artifact = model.Artifact("a" * 64, "cuda:90:32", (file,), entry.best, (argument_type,))
    first = dataclasses.replace(entry, artifacts=(artifact,))
    return text_of(dataclasses.replace(results, entries=(first, *results.entries[1:])))


# rows that spoil the first of the file's two entries only (artifact_named)
ONE_ENTRY_BAD = {"artifact-path-trick", "launcher-code-in-a-type", "file-name-ending-in-a-newline",
                 "type-ending-in-a-newline"}  # fmt: skip


@pytest.mark.parametrize(("name", "ext", "make"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_bundle_leaves_the_program_correct_with_one_short_warning(
    tmp_path: Path,
    tuned: model.Results,
    baseline_rss_kb: int,
    name: str,
    ext: str,
    make: Callable,
) -> None:
    bundle = tmp_path / ext
    bundle.write_bytes(make(tuned))
    run = run_program(tmp_path, bundle)
    assert len(run.warnings) == 1, run.warnings
    said = [line.split("tuned-kernels: ", 1)[1] for line in run.warnings]
    assert all(len(text) <= len(str(bundle)) + 260 for text in said), said  # names the file once, briefly
    # the file's other entry serves; a bad one's key is tuned, or predicted from the other
    served = 1 if name in ONE_ENTRY_BAD else 0
    not_served = run.stats["misses"] + run.stats["predicted"]
    assert (run.stats["hits"], not_served) == (served, 2 - served), run.stderr[-2000:]
    assert run.stats["max_rss_kb"] - baseline_rss_kb < MEMORY_BOUND_KB


def test_one_bad_entry_is_a_miss_and_the_rest_of_the_bundle_serves(
    tmp_path: Path, tuned: model.Results
) -> None:
    """An entry naming a config the file does not hold is left out, said once; the file's other entry
    serves (the whole bundle was dropped before, and every key tuned again)."""
    text = text_of(tuned).decode()
    bundle = tmp_path / "b.textproto"
    bundle.write_text(text.replace("entries {\n", "entries {\n  best: 99\n", 1))
    run = run_program(tmp_path, bundle)
    (warned,) = run.warnings
    assert "leaving out an entry" in warned and "its key is not served from it" in warned, warned
    # the other key: a config predicted from the entry that serves
    assert (run.stats["hits"], run.stats["predicted"], run.stats["misses"]) == (1, 1, 0), run.stderr[-2000:]


FRAGILE = """
import json, sys, warnings, torch
warnings.simplefilter("always")
sys.path.insert(0, {corpora!r})
import tuned_kernels; tuned_kernels.enable()
from fragile import triple
for _ in range(2):
    x = torch.randn(100)
    assert torch.equal(triple(x, torch.empty_like(x)), x * 3), "wrong result"
print("STATS " + json.dumps(tuned_kernels.stats()))
"""


def test_a_served_config_that_fails_to_launch_is_tuned_once_without_it(tmp_path: Path) -> None:
    """BLOCK=48 is in the kernel's own space (so it passes validation) but cannot launch: the launch is
    retried once, tuned as Triton would without that config, with one warning naming the bundle."""
    sys.path.insert(0, str(CORPORA))
    try:
        import fragile
    finally:
        sys.path.remove(str(CORPORA))
    from tuned_kernels.hardware import compiler_fingerprint, target_for_arch

    from tuned_kernels.triton_edge.keys import kernel_identity

    bad = model.Config.of({"BLOCK": 48}, num_warps=4, num_stages=3)
    target = target_for_arch("cpu")
    header = model.Header(
        target, compiler_fingerprint(target), model.Producer.TUNE, "t", "2026-11-22T00:00:00Z"
    )
    key = (100, "torch.float32", "torch.float32")
    entry = model.Entry(kernel_identity(fragile.triple_kernel), key, bad, (model.Timing(bad, 0.001),))
    bundle = tmp_path / "fragile.textproto"
    write_results(bundle, model.Results(header, (entry,)))
    script = tmp_path / "prog.py"
    script.write_text(FRAGILE.format(corpora=str(CORPORA)))
    env = {**os.environ, "TRITON_INTERPRET": "1", "TUNED_KERNELS_PATH": str(bundle),
           "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "cache")}  # fmt: skip
    out = forked_python.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    warned = factories.warnings_in(out.stderr)
    assert len(warned) == 1 and "fragile.textproto" in warned[0] and "failed to launch" in warned[0], warned
    stats = json.loads(out.stdout.split("STATS ", 1)[1])
    assert (stats["hits"], stats["misses"]) == (1, 1)  # served once, then tuned without BLOCK=48


def test_a_fifo_as_bundle_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "bundle.pb"
    os.mkfifo(fifo)
    run = run_program(tmp_path, fifo)
    assert len(run.warnings) == 1 and "not a regular file" in run.warnings[0], run.warnings
    assert (run.stats["hits"], run.stats["misses"]) == (0, 2)


def test_notes_beside_bundles_in_a_directory_are_not_read(tmp_path: Path, tuned: model.Results) -> None:
    folder = tmp_path / "bundles"
    folder.mkdir()
    write_results(folder / "doubling.pb.zst", tuned)
    (folder / "notes.txt").write_text("not a bundle")
    run = run_program(tmp_path, folder)
    assert run.warnings == [] and (run.stats["hits"], run.stats["misses"]) == (2, 0)


def install_bundle_package(site: Path, name: str, module_source: str) -> Path:
    """A bundle wheel as pip installs it into `site`: module `name` and its dist-info naming it in the
    `tuned_kernels.bundles` entry points; returns the module's folder (where its bundles go by default)."""
    package = site / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(module_source)
    info = site / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[tuned_kernels.bundles]\n{name} = {name}\n")
    return package


def a_fifo(folder: Path) -> Path:
    os.mkfifo(folder / "fifo")
    return folder / "fifo"


def a_symlink_loop(folder: Path) -> Path:
    (folder / "loop").symlink_to(folder / "loop")
    return folder / "loop"


def many_files(folder: Path) -> Path:
    crowd = folder / "crowd"
    crowd.mkdir()
    for i in range(100_000):
        (crowd / f"b{i}.pb").touch()
    return crowd


# (id, the package module's source, its BUNDLE_DIR made in a scratch folder): one warning naming the
# package, and the program tuned as without it
BROKEN_PACKAGES: list[tuple[str, str, Callable[[Path], Path] | None]] = [
    ("raises-on-import", "raise RuntimeError('broken bundle package')\n", None),
    ("exits-on-import", "import sys; sys.exit(3)\n", None),
    ("bundle-dir-is-a-fifo", "BUNDLE_DIR = {dir!r}\n", a_fifo),
    ("bundle-dir-is-a-symlink-loop", "BUNDLE_DIR = {dir!r}\n", a_symlink_loop),
    ("bundle-dir-of-100k-files", "BUNDLE_DIR = {dir!r}\n", many_files),
]


@pytest.mark.parametrize(("name", "source", "make_dir"), BROKEN_PACKAGES, ids=[b[0] for b in BROKEN_PACKAGES])
def test_a_broken_bundle_package_leaves_the_program_correct_with_one_warning(
    tmp_path: Path, name: str, source: str, make_dir: Callable[[Path], Path] | None
) -> None:
    bundle_dir = make_dir(tmp_path) if make_dir else None
    install_bundle_package(tmp_path / "site", "tk_broken", source.format(dir=str(bundle_dir)))
    run = run_program(tmp_path, None, site=tmp_path / "site")
    assert len(run.warnings) == 1 and "tk_broken" in run.warnings[0], run.warnings
    assert len(run.warnings[0]) < 300, run.warnings
    assert (run.stats["hits"], run.stats["misses"]) == (0, 2)


def test_two_packages_holding_the_same_key_serve_the_same_one_in_every_process(
    tmp_path: Path, tuned: model.Results
) -> None:
    """Both are selected; the one whose package name sorts first answers every key, whatever order the file
    system lists them in, and the other's entries are not mixed in."""
    first, second = (
        install_bundle_package(tmp_path / "site", n, "") / "doubling.pb" for n in ("tk_a", "tk_b")
    )
    write_results(second, tuned)
    write_results(first, edit_best(tuned, lambda k: {**k, "BLOCK": 32}))
    for attempt in ("one", "two"):
        (tmp_path / attempt).mkdir()
        run = run_program(tmp_path / attempt, None, site=tmp_path / "site")
        assert run.warnings == [] and len(run.stats["selected"]) == 2, run.stats
        assert run.stats["served_from"] == {str(first): 2}, run.stats["served_from"]


INDUCTOR_PROGRAM = r"""
import json, runpy, sys, warnings
warnings.simplefilter("always")
import tuned_kernels; tuned_kernels.enable()
runpy.run_path({app!r})  # checks its output against eager PyTorch
print("STATS " + json.dumps(tuned_kernels.stats()))
"""
INDUCTOR_APP = CORPORA / "inductor_app.py"


@pytest.fixture(scope="module")
def captured_inductor(tmp_path_factory: pytest.TempPathFactory) -> model.Results:
    """torch.compile's max-autotune choice of inductor_app's GEMM, captured: its key's winner and its GEMM's."""
    folder = tmp_path_factory.mktemp("inductor")
    bundle = folder / "captured.textproto"
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"),
           "TUNED_KERNELS_CACHE_DIR": str(folder / "overlay")}  # fmt: skip
    command = [sys.executable, "-m", "tuned_kernels", "capture", "-o", str(bundle), "--", sys.executable]
    done = forked_python.run(
        [*command, str(INDUCTOR_APP)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    captured = read_results(bundle)  # the choices alone: with its compiled graph, no choice is asked for
    return captured.with_entries(tuple(e for e in captured.entries if e.kernel.name != graphs.NAME))


def made_with_torch(results: model.Results, version: str) -> model.Results:
    compiler = dataclasses.replace(results.header.compiler, torch_version=version)
    identity = model.KernelIdentity("inductor.mm", factories.source_hash(f"torch {version}"))
    entries = tuple(dataclasses.replace(e, kernel=identity) for e in results.entries)
    return dataclasses.replace(
        results, header=dataclasses.replace(results.header, compiler=compiler)
    ).with_entries(entries)


def with_fusion_record_for_no_gemm(results: model.Results) -> model.Results:
    from tuned_kernels.inductor_edge import choices, fusion

    gemm = results.entries[0]
    fused = model.Config.of({"epilogue": True, "prologue": True})
    record = model.Entry(fusion.identity_for(gemm.kernel), choices.at_occurrence(gemm.key[:1], 7), fused)
    return results.with_entries((*results.entries, record))


# (id, the captured choices edited, warnings, hits): a choice Inductor does not offer or another torch's is
# refused with one warning and Inductor chooses as it would have; a record for no GEMM is never consulted
INDUCTOR_HOSTILE: list[tuple[str, Callable[[model.Results], model.Results], int, int]] = [
    (
        "choice-not-offered",
        lambda r: edit_best(r, lambda k: {"template_id": "triton::mm", "BLOCK_M": 7}),
        1,
        0,
    ),
    ("template-kwargs-edited", lambda r: edit_best(r, lambda k: {**k, "EVEN_K": True}), 1, 0),
    ("made-with-another-torch", lambda r: made_with_torch(r, "2.0.0"), 1, 0),
    ("fusion-record-for-no-gemm", with_fusion_record_for_no_gemm, 0, 1),
]


@pytest.mark.parametrize(
    ("name", "edit", "warned", "hits"), INDUCTOR_HOSTILE, ids=[h[0] for h in INDUCTOR_HOSTILE]
)
def test_hostile_inductor_choices_leave_the_compiled_program_correct(
    tmp_path: Path,
    captured_inductor: model.Results,
    name: str,
    edit: Callable[[model.Results], model.Results],
    warned: int,
    hits: int,
) -> None:
    bundle = tmp_path / "b.textproto"
    write_results(bundle, edit(captured_inductor))
    script = tmp_path / "prog.py"
    script.write_text(INDUCTOR_PROGRAM.format(app=str(INDUCTOR_APP)))
    env = {**os.environ, "TUNED_KERNELS_PATH": str(bundle), "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "ind"),
           "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "cache")}  # fmt: skip
    out = forked_python.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert len(factories.warnings_in(out.stderr)) == warned, factories.warnings_in(out.stderr)
    stats = json.loads(out.stdout.split("STATS ", 1)[1])
    assert (stats["hits"], stats["misses"]) == (hits, 1 - hits), stats


def shared_overlay(tmp_path: Path) -> Path:
    from tuned_kernels.hardware import compiler_fingerprint, target_for_arch

    from tuned_kernels.results.overlay import overlay_path

    os.environ["TUNED_KERNELS_CACHE_DIR"] = str(tmp_path / "cache")
    try:
        target = target_for_arch("cpu")
        path = overlay_path(target, compiler_fingerprint(target))
    finally:
        del os.environ["TUNED_KERNELS_CACHE_DIR"]
    path.parent.mkdir(parents=True)
    return path


def newer_schema(results: model.Results) -> bytes:
    from tuned_kernels.results import results_pb2 as pb

    envelope = pb.ResultsEnvelope()
    envelope.ParseFromString(encode_results(results, "x.pb"))
    envelope.schema_version = model.SCHEMA_VERSION + 1
    return envelope.SerializeToString()


def test_the_temporary_file_of_an_overlay_write_killed_midway_is_removed_by_the_next_write(
    tmp_path: Path, tuned: model.Results
) -> None:
    """A process killed while writing the overlay leaves its temporary file (as `write_atomic` names it);
    the next write, holding the lock every writer takes, removes it. Other files' temporaries stay."""
    from tuned_kernels.results.overlay import add_to_overlay

    overlay = tmp_path / "overlay-cpu.pb"
    left = tmp_path / f".{overlay.name}.k1ll3d.tmp"
    left.write_bytes(b"half a file")
    others = tmp_path / ".bundle.pb.abc123.tmp"
    others.write_bytes(b"another file's write")
    add_to_overlay(overlay, tuned.header, tuned.entries[:1])
    assert not left.exists() and others.exists()
    assert [e.slot for e in read_results(overlay).entries] == [tuned.entries[0].slot]


def test_an_overlay_this_version_cannot_read_is_never_rewritten(tmp_path: Path, tuned: model.Results) -> None:
    shared = shared_overlay(tmp_path)
    shared.write_bytes(newer_schema(tuned))
    before = shared.read_bytes()
    run = run_program(tmp_path, None, shared.parent)
    assert len(run.warnings) == 1 and "newer" in run.warnings[0], run.warnings
    assert shared.read_bytes() == before  # the user's data, untouched
    assert run.stats["misses"] == 2 and run.stats["overlay"]["path"] != str(shared)
    again = run_program(tmp_path, None, shared.parent)  # what was tuned is served from this user's own file
    assert (again.stats["hits"], again.stats["misses"]) == (2, 0) and shared.read_bytes() == before


def test_a_fifo_overlay_is_left_alone_without_hanging(tmp_path: Path) -> None:
    shared = shared_overlay(tmp_path)
    os.mkfifo(shared)
    run = run_program(tmp_path, None, shared.parent)
    assert len(run.warnings) == 1 and "not a regular file" in run.warnings[0], run.warnings
    assert Path(run.stats["overlay"]["path"]).is_file()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root")
def test_another_users_overlay_is_never_taken_over(tmp_path: Path, tuned: model.Results) -> None:
    shared = shared_overlay(tmp_path)
    write_results(shared, tuned)
    os.chown(shared, 12345, 12345)
    before = shared.read_bytes()
    run = run_program(tmp_path, None, shared.parent)
    assert len(run.warnings) == 1 and "another user" in run.warnings[0], run.warnings
    assert shared.read_bytes() == before and shared.stat().st_uid == 12345


def test_ops_survive_a_registry_that_cannot_start() -> None:
    program = (
        "import torch, tuned_kernels; tuned_kernels.enable()\n"
        "from tuned_kernels import ops\n"
        "a, b = torch.randn(16, 32).half(), torch.randn(32, 16).half()\n"
        "assert (ops.matmul(a, b).double() - a.double() @ b.double()).abs().max() < 0.05\n"
        "x = torch.randn(4, 64)\n"
        "assert torch.allclose(ops.softmax(x), torch.softmax(x, -1), atol=1e-5)\n"
    )
    env = {**os.environ, "TUNED_KERNELS_TARGET": "sm999", "TRITON_INTERPRET": "1"}
    out = forked_python.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    (warned,) = factories.warnings_in(out.stderr)
    assert "sm999" in warned


# Bad command lines: (arguments, with {tmp} for a scratch directory). Each must print one line on stderr,
# exit non-zero, and leave every file it was given as it was.
BAD_COMMANDS = [
    "merge {tmp}/good.pb -o {tmp}",
    "merge {tmp}/good.pb -o /proc/version",
    "merge {tmp}/good.pb -o {tmp}/file.pb/x.pb",
    "merge {tmp}/missing.pb -o {tmp}/out.pb",
    "build-wheel {tmp}/good.pb -o {tmp}/file.pb",
    "build-wheel {tmp}/good.pb -o /proc/self",
    "build-wheel {tmp}/good.pb -o {tmp}/dist --name ../evil",
    "build-wheel {tmp}/evil-version.textproto -o {tmp}/dist",
    "build-wheel {tmp}/good.pb -o {tmp}/dist --version not-a-version",
    "index {tmp}/empty -o {tmp}/simple",
    "index {tmp} -o {tmp}/file.pb",
    "capture -o {tmp}/file.pb -- /no/such/program",
    "capture -o {tmp} -- true",
    "capture -o {tmp}/out.json -- true",
    "coverage {tmp}/good.pb -- /no/such/program",
    "newer-compilers {tmp}/good.pb --releases {tmp}/missing.json",
    "newer-compilers {tmp}/good.pb --releases {tmp}/notes.txt",
    "newer-compilers {tmp}/good.pb --releases {tmp}/list.json",
    "newer-compilers {tmp}/good.pb --releases http://127.0.0.1:9/nothing",
    "newer-compilers {tmp}/evil-version.textproto --releases {tmp}/releases.json",
    "newer-compilers /nonexistent --releases {tmp}/releases.json",
    "inspect {tmp}/fifo.pb",
    "inspect {tmp}/no-such-bundle",
    "inspect {tmp}/notes.txt",
    "tune --corpus {tmp}/missing.py -o {tmp}/out.pb",
    "tune --corpus " + DOUBLING + " --seed-from {tmp}/missing.pb -o {tmp}/out.pb",
    "compile {tmp}/good.pb --target sm999 -o {tmp}/out.pb",
    "tune --corpus {tmp}/torch.py -o {tmp}/out.pb",
    "coverage {tmp}/missing.pb -- true",
    "coverage {tmp}/good.pb",
    "capture -o {tmp}/out.pb",
    "tune --corpus " + DOUBLING + " --jobs 0 -o {tmp}/out.pb",
    "tune --corpus " + DOUBLING + " --time-budget -1 -o {tmp}/out.pb",
    "tune --corpus " + DOUBLING + " --shard 3/2 -o {tmp}/out.pb",
    "tune --corpus " + DOUBLING + " --kernels nosuch -o {tmp}/out.pb",
    "merge -o {tmp}/out.pb",
    "no-such-command",
]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory, tuned: model.Results) -> Path:
    tmp = tmp_path_factory.mktemp("scratch")
    write_results(tmp / "good.pb", tuned)
    write_results(tmp / "file.pb", tuned)
    evil = dataclasses.replace(tuned.header.compiler, triton_version="../../x,y\nz")
    write_results(
        tmp / "evil-version.textproto",
        dataclasses.replace(tuned, header=dataclasses.replace(tuned.header, compiler=evil)),
    )
    (tmp / "empty").mkdir()
    (tmp / "torch.py").write_text("CORPUS = ()\n")
    (tmp / "notes.txt").write_text("not a bundle\n")
    (tmp / "list.json").write_text("[1, 2]")
    (tmp / "releases.json").write_text(json.dumps({"releases": {"9.0.0": [{}]}}))
    os.mkfifo(tmp / "fifo.pb")
    return tmp


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command", BAD_COMMANDS)
def test_bad_command_line_gives_one_line_and_a_failing_exit(scratch: Path, command: str) -> None:
    before = snapshot(scratch)
    args = command.format(tmp=scratch).split()
    env = {**os.environ, "TRITON_INTERPRET": "1", "TUNED_KERNELS_PATH": ""}
    out = forked_python.run(
        [sys.executable, "-m", "tuned_kernels", *args], capture_output=True, text=True, env=env, timeout=300
    )
    lines = out.stderr.strip().splitlines()
    assert out.returncode != 0 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert len(lines[0]) < 400 + len(str(scratch)) and lines[0].startswith("tuned-kernels"), lines[0]
    after = snapshot(scratch)
    assert {k: v for k, v in after.items() if k in before} == before  # nothing of the user's changed or lost


def test_a_bundles_text_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    """Terminal escape sequences in a file's fields (here its compiler's version, and a kernel's name) are
    written as escapes in the warning and in `inspect`: a bundle can neither clear nor recolour a terminal."""
    hostile = "\x1b[2J\x1b[31m9.9\x9b"
    compiler = dataclasses.replace(factories.TRITON_39, triton_version=hostile)
    bundle = tmp_path / "escapes.textproto"
    write_results(bundle, factories.results(factories.entry(f"pkg.{hostile}"), compiler=compiler))
    run = run_program(tmp_path, bundle)
    assert "\x1b" not in run.stderr and "\x9b" not in run.stderr
    assert any("\\x1b[2J\\x1b[31m9.9\\x9b" in line for line in run.warnings), run.warnings
    shown = forked_python.run(
        [sys.executable, "-m", "tuned_kernels", "inspect", str(bundle)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0 and "\x1b" not in shown.stdout and "\\x1b[2J" in shown.stdout


def test_an_overlay_path_that_is_a_directory_costs_the_overlay_only(
    tmp_path: Path, tuned: model.Results
) -> None:
    """A folder where the overlay file should be: the bundle still serves every key, and the one warning
    names the folder (not a file descriptor)."""
    cache = tmp_path / "cache"
    status = forked_python.run(
        [sys.executable, "-m", "tuned_kernels", "status", "--json"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "TRITON_INTERPRET": "1", "TUNED_KERNELS_CACHE_DIR": str(cache)},
    )  # fmt: skip
    overlay = Path(json.loads(status.stdout)["overlay"]["path"])
    overlay.mkdir(parents=True)
    bundle = tmp_path / "tuned.pb"
    write_results(bundle, tuned)
    run = run_program(tmp_path, bundle, cache)
    assert run.stats["hits"] == 2 and run.stats["misses"] == 0, run.stats
    (warned,) = run.warnings
    assert f"{overlay}: a directory, not a file" in warned


def test_an_overlay_folder_name_too_long_for_the_file_system_costs_the_overlay_only(
    tmp_path: Path, tuned: model.Results
) -> None:
    """A 100,000-character TUNED_KERNELS_CACHE_DIR: the bundle still serves every key (serving used to stop
    altogether), one short line says why, and the verbose summary comes without a traceback."""
    bundle = tmp_path / "tuned.pb"
    write_results(bundle, tuned)
    run = run_program(tmp_path, bundle, tmp_path / ("x" * 100_000))
    assert run.stats["hits"] == 2 and run.stats["misses"] == 0, run.stats
    (warned,) = run.warnings
    assert "cannot use the overlay folder: [Errno 36] File name too long" in warned and len(warned) < 300


def test_an_enormous_text_bundle_is_refused_before_it_is_read(tmp_path: Path, baseline_rss_kb: int) -> None:
    """A 900 MB text file (sparse: no disk is spent) is refused by its size alone, with one warning and no
    more memory than the program needs without it."""
    bundle = tmp_path / "huge.textproto"
    with bundle.open("wb") as f:
        f.truncate(900 << 20)
    run = run_program(tmp_path, bundle)
    (warned,) = run.warnings
    assert "text larger than the 8388608-byte limit: use .pb.zst" in warned
    assert run.stats["max_rss_kb"] - baseline_rss_kb < 64 * 1024


def test_overlay_writes_that_fail_are_counted_and_named_as_a_fall_back(tmp_path: Path) -> None:
    """An overlay that cannot be written: the program runs, says so once, and stats() counts each tuned
    config that stayed in the process."""
    run = run_program(tmp_path, None, Path("/proc/tuned-kernels-cannot-write-here"))
    assert run.stats["misses"] == 2 and run.stats["fallbacks"] == {"overlay_write": 2}, run.stats
    (warned,) = run.warnings
    assert "cannot write /proc/tuned-kernels-cannot-write-here" in warned


def test_a_hook_failure_leaves_the_decision_to_its_owner_counted_each_time() -> None:
    from tuned_kernels.registry.exit_summary import exit_summary

    from tuned_kernels import fallbacks
    from tuned_kernels.errors import owner_decides

    before = fallbacks.counts().get("owner_decides", 0)
    said: list[str] = []
    seen: set[str] = set()
    for _ in range(3):
        with owner_decides(said.append, "serve a choice", "Inductor", seen):
            raise RuntimeError("an object laid out otherwise")
    assert (
        fallbacks.counts()["owner_decides"] == before + 3 and len(said) == 1
    )  # counted each time, said once
    summary = {"hits": 0, "nearest": 0, "misses": 0, "misses_by_reason": {}, "configs_benchmarked": 0,
               "seconds_tuning": 0.0, "changed_kernels": {}, "selected": [], "overlay": {"path": "o"},
               "compiled_kernels": {"compiled_here": None}, "fallbacks": {"owner_decides": 3}}  # fmt: skip
    assert "tuned-kernels: fell back: 3 x Inductor or Helion decided alone (tuned-kernels' hook failed)" in (
        exit_summary(summary)
    )


@pytest.mark.parametrize("bomb", sorted(refusal.BOMBS))
def test_a_small_file_that_would_cost_far_more_to_parse_is_refused_in_one_line(
    tmp_path: Path, bomb: str
) -> None:
    """Each bomb of benchmarks/refusal.py (which times the refusals) is refused before it is parsed, with
    one line naming the file and the cause."""
    file_name, build = refusal.BOMBS[bomb]
    build(tmp_path / file_name)
    with pytest.raises(ResultsFormatError) as refused:
        read_results(tmp_path / file_name)
    message = str(refused.value)
    assert message.startswith(str(tmp_path / file_name)) and "\n" not in message and len(message) < 400
    assert ("text format" if bomb == "escaped-text" else "more than this file's size allows") in message


def test_an_exit_waits_briefly_for_an_overlay_another_process_holds_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stopped job holding the overlay's lock does not hold a finished program for the lock's minute: it
    ends within seconds, saying once that what it tuned is not kept."""
    from filelock import FileLock
    from tuned_kernels.hardware import compiler_fingerprint, detect

    from tuned_kernels.results import overlay

    monkeypatch.setenv("TUNED_KERNELS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    target = detect()
    path = overlay.overlay_path(target, compiler_fingerprint(target))
    path.parent.mkdir(parents=True)
    program = (
        f"import sys, torch\nsys.path.insert(0, {str(CORPORA)!r})\nimport tuned_kernels; tuned_kernels.enable()\n"
        "from doubling import double\nx = torch.randn(100)\nassert torch.equal(double(x, torch.empty_like(x)), x * 2)\n"
        "print('done')\n"
    )
    with FileLock(str(path) + ".lock", timeout=1):
        done = forked_python.run(
            [sys.executable, "-c", program], env=dict(os.environ), capture_output=True, text=True, timeout=45
        )
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr[-2000:]
    (warned,) = factories.warnings_in(done.stderr)
    assert "the overlay is still locked by another process" in warned


@pytest.mark.parametrize("lock", ["names-one-of-two", "not-a-lock"])
def test_with_a_lock_set_only_the_exact_bundles_it_names_serve(
    tmp_path: Path, tuned: model.Results, monkeypatch: pytest.MonkeyPatch, lock: str
) -> None:
    """`tuned-kernels lock` pins the bundles a deployment tested: another file (here one of the same keys,
    made later) is left out, said once; a lock that cannot be read serves no bundle."""
    folder = tmp_path / "bundles"
    folder.mkdir()
    write_results(folder / "a.pb", tuned)
    later = dataclasses.replace(tuned.header, created_at="2030-01-01T00:00:00Z")
    write_results(folder / "b.pb", dataclasses.replace(tuned, header=later))
    lock_file = tmp_path / "deploy.lock"
    if lock == "names-one-of-two":
        env = {**os.environ, "TUNED_KERNELS_PATH": str(folder / "a.pb")}
        made = forked_python.run([sys.executable, "-m", "tuned_kernels", "lock", "-o", str(lock_file)],
                              env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert made.returncode == 0 and "locked 1 bundle files" in made.stdout, made.stderr
    else:
        lock_file.write_text("{}")
    monkeypatch.setenv("TUNED_KERNELS_LOCK", str(lock_file))
    run = run_program(tmp_path, folder)
    (warned,) = run.warnings
    if lock == "names-one-of-two":
        assert f"not serving {folder / 'b.pb'}: not in the lock" in warned
        assert (run.stats["hits"], run.stats["misses"]) == (2, 0)
    else:
        assert "TUNED_KERNELS_LOCK" in warned and "no bundle is served" in warned
        assert (run.stats["hits"], run.stats["misses"]) == (0, 2)


@pytest.mark.parametrize("command", ["status", "doctor"])
def test_status_and_doctor_print_a_hostile_name_escaped(
    tmp_path: Path, tuned: model.Results, command: str
) -> None:
    """A bundle's file name and a cache folder holding a terminal escape sequence reach the terminal escaped."""
    folder = tmp_path / "b\x1b[2Jx"
    folder.mkdir()
    write_results(folder / "b.pb", tuned)
    cache = tmp_path / "c\x1b]0;PWNED\x07"
    env = {**os.environ, "TUNED_KERNELS_PATH": str(folder), "TUNED_KERNELS_CACHE_DIR": str(cache)}
    done = forked_python.run([sys.executable, "-m", "tuned_kernels", command], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert "\x1b" not in done.stdout + done.stderr and "\\x1b" in done.stdout, done.stdout
