"""The one reader and the one writer of results files.

Reading is defensive: decompression is bounded, binary payloads carry a sha256, the schema version is
checked and every field is validated; any problem is one `ResultsFormatError` naming the file and cause.
Writing is atomic: a temporary file in the same directory, fsync'd, then renamed over the target.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import zstandard
from google.protobuf import message, text_format

from tuned_kernels import model
from tuned_kernels.errors import ResultsFormatError
from tuned_kernels.results import codec
from tuned_kernels.results import results_pb2 as pb
from tuned_kernels.results.formats import format_for
from tuned_kernels.results.view import ResultsView

MAX_DECODED_BYTES = 1 << 30  # 1 GiB: far above any real bundle, far below a zip bomb


def encode_results(results: model.Results, path: str) -> bytes:
    """The bytes of `results` in the format `path`'s extension selects."""
    fmt = format_for(path)
    msg = codec.results_to_pb(results, with_index=not fmt.text)
    if fmt.text:
        raw: bytes = text_format.MessageToString(msg).encode("utf-8")
    else:
        payload = msg.SerializeToString(deterministic=True)
        envelope = pb.ResultsEnvelope(
            format=codec.FORMAT_NAME,
            schema_version=results.header.schema_version,
            payload=payload,
            sha256=hashlib.sha256(payload).digest(),
        )
        raw = bytes(envelope.SerializeToString(deterministic=True))
    if fmt.compressed:
        compressor = zstandard.ZstdCompressor(level=10, write_checksum=True, write_content_size=True)
        raw = bytes(compressor.compress(raw))
    return raw


def decode_results(raw: bytes, path: str, max_bytes: int = MAX_DECODED_BYTES) -> model.Results:
    """Parses bytes read from `path`; raises ResultsFormatError naming `path` and the cause."""
    return ResultsView(_decode_message(raw, path, max_bytes), path).results()


def _decode_message(raw: bytes, path: str, max_bytes: int) -> pb.Results:
    fmt = format_for(path)
    if not raw:
        raise ResultsFormatError(path, "empty file")
    if fmt.compressed:
        raw = _bounded_decompress(raw, path, max_bytes)
    return _parse_text(raw, path) if fmt.text else _parse_binary(raw, path)


def read_results(path: str | os.PathLike[str], max_bytes: int = MAX_DECODED_BYTES) -> model.Results:
    return open_results(path, max_bytes).results()


def open_results(path: str | os.PathLike[str], max_bytes: int = MAX_DECODED_BYTES) -> ResultsView:
    """The file opened for look-ups: header checked now, entries decoded (and validated) when asked for."""
    name = os.fspath(path)
    format_for(name)  # an unknown extension fails before any I/O
    try:
        with open(name, "rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as exc:
        raise ResultsFormatError(name, exc.strerror or str(exc)) from None
    if len(raw) > max_bytes:
        raise ResultsFormatError(name, f"larger than the {max_bytes}-byte limit")
    return ResultsView(_decode_message(raw, name, max_bytes), name)


def write_results(path: str | os.PathLike[str], results: model.Results) -> None:
    name = os.fspath(path)
    write_atomic(Path(name), encode_results(results, name))


def write_atomic(path: Path, data: bytes) -> None:
    """Readers see the old file or the new one, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # as open() would create it (mkstemp makes it private)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _bounded_decompress(raw: bytes, path: str, max_bytes: int) -> bytes:
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(raw)
        out = reader.read(max_bytes + 1)
    except zstandard.ZstdError as exc:
        raise ResultsFormatError(path, f"not valid zstd data ({exc})") from None
    if len(out) > max_bytes:
        raise ResultsFormatError(path, f"decompresses to more than the {max_bytes}-byte limit")
    if not out:
        raise ResultsFormatError(path, "not valid zstd data (no frame or empty frame)")
    return bytes(out)


def _parse_text(raw: bytes, path: str) -> pb.Results:
    try:
        msg = pb.Results()
        text_format.Parse(raw.decode("utf-8"), msg)
        return msg
    except UnicodeDecodeError:
        raise ResultsFormatError(path, "not UTF-8 text (a binary file with a text extension?)") from None
    except text_format.ParseError as exc:
        raise ResultsFormatError(path, f"text format: {exc}") from None


def _parse_binary(raw: bytes, path: str) -> pb.Results:
    envelope = pb.ResultsEnvelope()
    try:
        envelope.ParseFromString(raw)
    except message.DecodeError:
        raise ResultsFormatError(path, "not a tuned-kernels results file (binary decode failed)") from None
    if envelope.format != codec.FORMAT_NAME:
        raise ResultsFormatError(path, "not a tuned-kernels results file (no results envelope)")
    try:
        codec.check_schema_version(envelope.schema_version)
    except ValueError as exc:
        raise ResultsFormatError(path, str(exc)) from None
    if hashlib.sha256(envelope.payload).digest() != envelope.sha256:
        raise ResultsFormatError(path, "checksum mismatch: the file is corrupt or truncated")
    results = pb.Results()
    try:
        results.ParseFromString(envelope.payload)
    except message.DecodeError:
        raise ResultsFormatError(path, "payload does not decode") from None
    return results
