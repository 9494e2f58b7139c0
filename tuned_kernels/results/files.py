"""The one reader and the one writer of results files.

Reading is defensive: only regular files are opened (a FIFO or device would block or never end), and
memory and time are bounded before any work by a budget that grows with the file's size on disk
(`read_budget`): the decompressed bytes and the parser's estimated memory must both fit in it, so a small
file cannot expand into gigabytes. Binary payloads carry a sha256, the schema version is checked and
every field is validated; any problem is one short `ResultsFormatError` naming the file and cause.
Writing is atomic: a temporary file in the same directory, fsync'd, then renamed over the target.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from pathlib import Path

import zstandard
from google.protobuf import message, text_format

from tuned_kernels import model
from tuned_kernels.errors import ResultsFormatError
from tuned_kernels.results import codec, parse_cost
from tuned_kernels.results import results_pb2 as pb
from tuned_kernels.results.formats import format_for
from tuned_kernels.results.view import ResultsView

MAX_DECODED_BYTES = 1 << 30  # 1 GiB: far above any real bundle, far below a zip bomb
BUDGET_BASE_BYTES = 16 << 20  # every file may use this much ...
BUDGET_PER_FILE_BYTE = 32  # ... plus this much per byte on disk (real bundles decompress 3-9x)
MAX_TEXT_BYTES = 8 << 20  # text is parsed in Python (~1 s per few MB): hand-edited files are far smaller
# What the parser allocates is bounded by counting the bytes that can start an element: every sub-message,
# string or bytes field starts with a length-delimited tag (field numbers 1-9 in our schema; unknown fields
# are kept as raw bytes), every text-format message or string with one of these characters. upb spends
# 60-75 bytes on an empty sub-message that takes 2 bytes on the wire.
PARSE_BYTES_PER_ELEMENT = 64
_BINARY_ELEMENT_TAGS = parse_cost.ELEMENT_TAGS
_TEXT_ELEMENT_CHARS = b"{<\"'"
_NOT = {
    kept: bytes(b for b in range(256) if b not in kept)
    for kept in (_BINARY_ELEMENT_TAGS, _TEXT_ELEMENT_CHARS)
}


def read_budget(size_on_disk: int) -> int:
    """The bytes reading a file of this size may decompress to, and the memory its parse may take."""
    return min(MAX_DECODED_BYTES, BUDGET_BASE_BYTES + BUDGET_PER_FILE_BYTE * size_on_disk)


def encode_results(results: model.Results, path: str) -> bytes:
    """The bytes of `results` in the format `path`'s extension selects."""
    fmt = format_for(path)
    msg = codec.results_to_pb(results, packed=not fmt.text)
    if fmt.text:
        raw: bytes = text_format.MessageToString(msg).encode("utf-8")
    else:
        payload = msg.SerializeToString(deterministic=True)
        envelope = pb.ResultsEnvelope(
            format=codec.FORMAT_NAME,
            schema_version=msg.header.schema_version,
            payload=payload,
            sha256=hashlib.sha256(payload).digest(),
        )
        raw = bytes(envelope.SerializeToString(deterministic=True))
    if fmt.compressed:
        compressor = zstandard.ZstdCompressor(level=10, write_checksum=True, write_content_size=True)
        raw = bytes(compressor.compress(raw))
    return raw


def decode_results(raw: bytes, path: str, max_bytes: int | None = None) -> model.Results:
    """Parses bytes read from `path`; raises ResultsFormatError naming `path` and the cause."""
    return ResultsView(_decode_message(raw, path, max_bytes or read_budget(len(raw))), path).results()


def _decode_message(raw: bytes, path: str, budget: int) -> pb.Results:
    fmt = format_for(path)
    if not raw:
        raise ResultsFormatError(path, "empty file")
    if fmt.compressed:
        raw = _bounded_decompress(raw, path, budget)
    if fmt.text and len(raw) > MAX_TEXT_BYTES:
        raise ResultsFormatError(path, f"text larger than the {MAX_TEXT_BYTES}-byte limit: use .pb.zst")
    _check_parse_cost(raw, path, budget, _TEXT_ELEMENT_CHARS if fmt.text else _BINARY_ELEMENT_TAGS)
    return _parse_text(raw, path) if fmt.text else _parse_binary(raw, path)


def _check_parse_cost(raw: bytes, path: str, budget: int, element_bytes: bytes) -> None:
    """Refuses data whose parse could take more memory than the budget, counting (at C speed) the bytes
    that can start an element: an upper bound on the elements the parser allocates."""
    if len(raw) // 2 * PARSE_BYTES_PER_ELEMENT <= budget:  # every element takes at least two bytes
        return
    elements = len(raw.translate(None, _NOT[element_bytes]))  # what is left: the bytes that can start one
    if elements * PARSE_BYTES_PER_ELEMENT > budget and element_bytes is _BINARY_ELEMENT_TAGS:
        # blobs' contents counted as the one value each is; the count stops once it passes the budget
        elements = parse_cost.binary_elements(raw, budget // PARSE_BYTES_PER_ELEMENT)
    if elements * PARSE_BYTES_PER_ELEMENT > budget:
        raise ResultsFormatError(
            path, f"up to {elements} elements in {len(raw)} bytes: more than this file's size allows"
        )


def read_results(path: str | os.PathLike[str]) -> model.Results:
    return open_results(path).results()


def open_results(path: str | os.PathLike[str], digest: bool = False) -> ResultsView:
    """The file opened for look-ups: header checked now, entries decoded (and validated) when asked for.
    `digest`: the view also holds the size and sha256 of the very bytes read (a signature or a lock is
    checked against what is served, not against the file as it may be a moment later)."""
    name = os.fspath(path)
    fmt = format_for(name)  # an unknown extension fails before any I/O
    if fmt.text and not fmt.compressed:  # its size is checked before a byte is read
        raw, info = _read_regular(
            name, MAX_TEXT_BYTES, "text larger than the {limit}-byte limit: use .pb.zst"
        )
    else:
        raw, info = _read_regular(name, MAX_DECODED_BYTES)
    view = ResultsView(_decode_message(raw, name, read_budget(len(raw))), name)
    view.read_from = (info.st_dev, info.st_ino)
    if digest:
        view.digest = (len(raw), hashlib.sha256(raw).hexdigest())
    return view


def read_regular_file(
    name: str, max_bytes: int, too_large: str = "larger than the {limit}-byte limit ({size} bytes)"
) -> bytes:
    """The bytes of `name` if it is a regular file of at most `max_bytes`: checked before reading, and
    opened without blocking, so a FIFO, device or directory is refused instead of hanging the program."""
    return _read_regular(name, max_bytes, too_large)[0]


def _read_regular(
    name: str, max_bytes: int, too_large: str = "larger than the {limit}-byte limit ({size} bytes)"
) -> tuple[bytes, os.stat_result]:
    """`read_regular_file`'s bytes, and the status of the very file they were read from."""
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ResultsFormatError(name, exc.strerror or str(exc)) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # checked on the descriptor: a directory cannot be wrapped in a file
        os.close(fd)
        raise ResultsFormatError(
            name, "a directory, not a file" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        )
    with os.fdopen(fd, "rb") as f:
        if info.st_size > max_bytes:
            raise ResultsFormatError(name, too_large.format(limit=max_bytes, size=info.st_size))
        try:
            raw = f.read(max_bytes + 1)
        except OSError as exc:
            raise ResultsFormatError(name, exc.strerror or str(exc)) from None
    if len(raw) > max_bytes:  # it grew while we read
        raise ResultsFormatError(name, f"larger than the {max_bytes}-byte limit")
    return raw, info


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
    """The process's umask, read where the kernel shows it (Linux: /proc/self/status), so that no other
    thread creates a file under a umask set for a moment to read it; elsewhere set and put back."""
    with (
        contextlib.suppress(OSError, ValueError),
        open("/proc/self/status", encoding="ascii", errors="replace") as status,
    ):
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
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
        raise ResultsFormatError(path, f"decompresses to more than this file's {max_bytes}-byte budget")
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
    payload = envelope.payload  # each read of the field copies it
    if hashlib.sha256(payload).digest() != envelope.sha256:
        raise ResultsFormatError(path, "checksum mismatch: the file is corrupt or truncated")
    results = pb.Results()
    try:
        results.ParseFromString(payload)
    except message.DecodeError:
        raise ResultsFormatError(path, "payload does not decode") from None
    return results
