"""The results format: the extension picks the encoding, all round-trip, bad files fail in one line."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import factories
from tuned_kernels import model
from tuned_kernels.cli import main
from tuned_kernels.errors import ResultsFormatError
from tuned_kernels.results import codec, open_results, read_results, write_results
from tuned_kernels.results.files import decode_results, encode_results
from tuned_kernels.results.formats import format_for

ROOT = Path(__file__).resolve().parents[1]
EXTENSIONS = [".textproto", ".txt", ".pb", ".binpb", ".pb.zst", ".textproto.zst", ".binpb.zst", ".txt.zst"]
SAMPLE = factories.results(
    factories.entry(),
    factories.entry(key=(4096, "torch.bfloat16"), block=128),
    factories.entry("pkg.softmax_kernel", key=(7, True, None, 0.5, "torch.float32")),
)


@pytest.mark.parametrize(
    ("name", "text", "compressed"),
    [
        ("r.textproto", True, False),
        ("r.txt", True, False),
        ("r.pb", False, False),
        ("r.binpb", False, False),
        ("r.pb.zst", False, True),
        ("r.textproto.zst", True, True),
        ("R.PB.ZST", False, True),
    ],
)
def test_extension_selects_encoding(name: str, text: bool, compressed: bool) -> None:
    fmt = format_for(name)
    assert (fmt.text, fmt.compressed) == (text, compressed)


@pytest.mark.parametrize("name", ["r.json", "r.zst", "r", "r.pb.gz", "r.proto"])
def test_unknown_extension_is_a_clear_error(name: str) -> None:
    with pytest.raises(ResultsFormatError, match=r"unknown extension; expected one of \.textproto"):
        format_for(name)


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_every_encoding_reads_back_identical_entries(tmp_path: Path, ext: str) -> None:
    path = tmp_path / f"results{ext}"
    write_results(path, SAMPLE)
    assert read_results(path) == SAMPLE


def test_text_file_parses_against_the_shipped_proto(tmp_path: Path) -> None:
    """Compiles results.proto afresh, into a pool of its own, and parses our text output with it."""
    descriptors = tmp_path / "results.desc"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{ROOT}",
            f"--descriptor_set_out={descriptors}",
            "tuned_kernels/results/results.proto",
        ],
        check=True,
        timeout=300,
    )
    pool = descriptor_pool.DescriptorPool()
    for file_proto in descriptor_pb2.FileDescriptorSet.FromString(descriptors.read_bytes()).file:
        pool.Add(file_proto)
    fresh_results = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("tuned_kernels.results.v1.Results")
    )
    write_results(tmp_path / "r.textproto", SAMPLE)
    msg = text_format.Parse((tmp_path / "r.textproto").read_text(), fresh_results())
    assert msg.header.target.arch == "cpu" and len(msg.entries) == 3


def test_committed_generated_code_matches_the_proto(tmp_path: Path) -> None:
    shutil.copytree(
        ROOT / "tuned_kernels",
        tmp_path / "tuned_kernels",
        ignore=shutil.ignore_patterns("*_pb2.py", "*_pb2.pyi", "__pycache__"),
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I.",
            "--python_out=.",
            "--pyi_out=.",
            "tuned_kernels/results/results.proto",
        ],
        cwd=tmp_path,
        check=True,
        timeout=300,
    )
    for name in ("results_pb2.py", "results_pb2.pyi"):
        fresh = (tmp_path / "tuned_kernels/results" / name).read_text()
        committed = (ROOT / "tuned_kernels/results" / name).read_text()
        assert fresh == committed, f"{name} drifted from results.proto: run `make proto`"


def _flip_bit(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0x10]) + data[middle + 1 :]


PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
)


def _future_schema(ext: str) -> bytes:
    header = model.Header(
        factories.CPU,
        factories.TRITON_39,
        model.Producer.TUNE,
        "9.0",
        "2030-01-01T00:00:00Z",
        schema_version=model.SCHEMA_VERSION + 1,
    )
    return encode_results(model.Results(header, ()), f"x{ext}")


BAD_FILES = [
    ("empty", ".pb", lambda: b"", "empty file"),
    ("empty", ".textproto", lambda: b"", "empty file"),
    ("truncated", ".pb", lambda: encode_results(SAMPLE, "x.pb")[:-40], "corrupt or truncated|decode"),
    ("truncated", ".pb.zst", lambda: encode_results(SAMPLE, "x.pb.zst")[:-20], "zstd"),
    ("truncated", ".textproto", lambda: encode_results(SAMPLE, "x.textproto")[:-30], "text format|expected"),
    ("bit-flipped", ".pb", lambda: _flip_bit(encode_results(SAMPLE, "x.pb")), "checksum|decode"),
    ("bit-flipped", ".pb.zst", lambda: _flip_bit(encode_results(SAMPLE, "x.pb.zst")), "zstd"),
    ("png", ".pb", lambda: PNG, "not a tuned-kernels results file"),
    ("png", ".pb.zst", lambda: PNG, "not valid zstd data"),
    ("png", ".textproto", lambda: PNG, "not UTF-8 text"),
    ("future", ".pb", lambda: _future_schema(".pb"), "newer than this tuned-kernels reads"),
    ("future", ".textproto", lambda: _future_schema(".textproto"), "newer than this tuned-kernels reads"),
    ("future", ".pb.zst", lambda: _future_schema(".pb.zst"), "newer than this tuned-kernels reads"),
]


@pytest.mark.parametrize(
    ("kind", "ext", "make", "cause"), BAD_FILES, ids=[f"{k}{e}" for k, e, _, _ in BAD_FILES]
)
def test_bad_file_makes_inspect_fail_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, ext: str, make: object, cause: str
) -> None:
    path = tmp_path / f"{kind}{ext}"
    path.write_bytes(make())  # type: ignore[operator]
    assert main(["inspect", str(path)]) == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0], captured.err
    assert __import__("re").search(cause, lines[0]), lines[0]
    assert captured.out == ""


def test_decompression_is_bounded() -> None:
    bomb = encode_results(SAMPLE, "x.textproto.zst")
    with pytest.raises(ResultsFormatError, match="more than this file's 100-byte budget"):
        decode_results(bomb, "x.textproto.zst", max_bytes=100)


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ("num_warps: 4", "num_warps: 0"),
        ('arch: "cpu"', 'arch: ""'),
        ('vendor: "cpu"', 'vendor: "intel"'),
        ('name: "BLOCK"', 'name: "BL OCK"'),
        ("time_ms: 1.0", "time_ms: -1.0"),
        ("best: 3", "best: 99"),
        ("  kernel: 1", "  kernel: 7"),
    ],
)
def test_every_field_is_validated(patch: str, field: str) -> None:
    text = encode_results(SAMPLE, "x.textproto").decode().replace(patch, field, 1)
    with pytest.raises(ResultsFormatError, match=r"x.textproto: field .*: expected"):
        decode_results(text.encode(), "x.textproto")


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.text(max_size=8),
    st.floats(allow_nan=False, allow_infinity=False),
)
entries = st.builds(
    lambda name, key, block, t: factories.entry(name, tuple(key), block, t),
    st.sampled_from(["a.k1", "b.k2"]),
    st.lists(scalars, max_size=4),
    st.integers(1, 4096),
    st.floats(0.001, 1e3),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(entries, max_size=5), st.sampled_from(EXTENSIONS))
def test_round_trip_property(items: list[model.Entry], ext: str) -> None:
    original = factories.results(*{e.slot: e for e in items}.values())
    assert decode_results(encode_results(original, f"x{ext}"), f"x{ext}") == original


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_how_many_programs_a_multiprocessor_held_travels_with_each_timing(ext: str) -> None:
    timed = factories.entry()
    timed = dataclasses.replace(
        timed, timings=tuple(dataclasses.replace(t, resident=3) for t in timed.timings)
    )
    original = factories.results(timed)
    assert decode_results(encode_results(original, f"x{ext}"), f"x{ext}") == original
    text = encode_results(original, "x.textproto").decode().replace("resident: 3", f"resident: {2**32 - 1}")
    read = decode_results(text.encode(), "x.textproto")  # a figure, read as at most a thread each
    assert {t.resident for t in read.entries[0].timings} == {codec.MAX_RESIDENT}


@pytest.mark.parametrize("ext", [".pb.zst", ".textproto"])
def test_an_opened_file_finds_any_key_by_its_slot(tmp_path: Path, ext: str) -> None:
    many = factories.results(*(factories.entry(key=(i, "torch.float16")) for i in range(300)))
    write_results(tmp_path / f"b{ext}", many)
    view = open_results(tmp_path / f"b{ext}")
    assert len(view) == 300 and view.header == many.header
    for wanted in (many.entries[0], many.entries[123], many.entries[-1]):
        assert view.lookup(wanted.slot) == wanted
    kernel = many.entries[0].kernel
    assert view.lookup((kernel.name, kernel.source_hash, (300, "torch.float16"))) is None
    assert view.lookup((kernel.name, kernel.source_hash, (1.0, "torch.float16"))) is None  # 1.0 is not 1


def test_a_binary_bundle_decodes_only_the_entries_it_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Binary files pack their entries one by one (schema v2): opening a bundle parses none of them, a
    look-up parses the one it finds (100k entries loaded in 61 ms before, 36 ms with this, here)."""
    from tuned_kernels.results import codec

    many = factories.results(*(factories.entry(key=(n, "torch.float16")) for n in range(1000)))
    write_results(tmp_path / "many.pb.zst", many)
    decoded = []
    real = codec.entry_from_pb
    monkeypatch.setattr(codec, "entry_from_pb", lambda *args: decoded.append(args[2]) or real(*args))
    view = open_results(tmp_path / "many.pb.zst")
    assert len(view) == 1000 and decoded == []
    assert view.lookup(many.entries[617].slot) == many.entries[617]
    assert decoded == ["entries[617]"]


def test_a_binary_file_of_schema_v1_is_still_read(tmp_path: Path) -> None:
    """Before v2 the entries were one repeated field, with the slot digests beside them."""
    import hashlib

    from tuned_kernels.results import codec
    from tuned_kernels.results import results_pb2 as pb

    msg = codec.results_to_pb(SAMPLE)
    msg.header.schema_version = 1
    msg.index.extend(model.slot_digest(e.slot) for e in SAMPLE.entries)
    payload = msg.SerializeToString()
    envelope = pb.ResultsEnvelope(
        format=codec.FORMAT_NAME, schema_version=1, payload=payload, sha256=hashlib.sha256(payload).digest()
    )
    (tmp_path / "v1.pb").write_bytes(envelope.SerializeToString())
    assert read_results(tmp_path / "v1.pb").entries == SAMPLE.entries
    assert open_results(tmp_path / "v1.pb").lookup(SAMPLE.entries[2].slot) == SAMPLE.entries[2]


def test_written_files_get_the_mode_the_umask_gives(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_results(tmp_path / "r.pb", SAMPLE)
    finally:
        os.umask(old)
    assert (tmp_path / "r.pb").stat().st_mode & 0o777 == 0o640
