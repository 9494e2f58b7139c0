"""How many elements parsing a binary results file may allocate, counted before it is parsed. Pure.

Every sub-message, string or bytes field starts with a length-delimited tag byte (field numbers 1-9 in our
schema; unknown fields are kept as raw bytes), so the bytes that could be such a tag bound the elements.
Inside the contents of a blob (compiled kernels, compiled graphs: machine code and Inductor's cache
entries) that bound is far too high — about one byte in 28 of random data looks like a tag — while the
parser makes one bytes value of each: the envelope's and the results' top-level fields are walked, a
blob's contents counted as what they are, and everything else counted byte by byte as before. A file whose
top level cannot be walked is counted byte by byte throughout.
"""

from __future__ import annotations

from collections.abc import Callable

ELEMENT_TAGS = bytes((number << 3) | 2 for number in range(1, 10))
_NOT_TAGS = bytes(b for b in range(256) if b not in ELEMENT_TAGS)
ENVELOPE_PAYLOAD = 3  # ResultsEnvelope.payload
RESULTS_BLOBS = 4  # Results.blobs: map entries of a key (string) and a value (bytes)
MAP_KEY, MAP_VALUE = 1, 2
LENGTH_DELIMITED = 2


def tag_bytes(data: bytes | memoryview) -> int:
    """The bytes of `data` that could start an element."""
    return len(bytes(data).translate(None, _NOT_TAGS))


def binary_elements(raw: bytes, limit: int | None = None) -> int:
    """An upper bound on the elements parsing the binary file `raw` (a ResultsEnvelope) allocates; once it
    passes `limit` the count stops there (the file is refused either way: a file of millions of tiny
    fields is refused in the time its first `limit` take)."""
    stop = len(raw) if limit is None else limit
    try:
        return _walk(memoryview(raw), {ENVELOPE_PAYLOAD: lambda p: _results_elements(p, stop)}, stop)
    except ValueError:
        return tag_bytes(raw)


def _results_elements(payload: memoryview, stop: int) -> int:
    return _walk(payload, {RESULTS_BLOBS: _blob_elements}, stop)


def _blob_elements(entry: memoryview) -> int:
    """A blob's map entry: its key and value are one element each, whatever bytes they hold."""
    return _walk(entry, {MAP_KEY: _none, MAP_VALUE: _none}, len(entry))


def _none(_: memoryview) -> int:
    return 0


def _walk(data: memoryview, inner: dict[int, Callable[[memoryview], int]], stop: int) -> int:
    """Elements of the message `data`, counting the fields named in `inner` by their function, up to the
    first count past `stop` (one-byte keys and lengths, the common case, read without a call)."""
    elements, i, end = 0, 0, len(data)
    while i < end and elements <= stop:
        key = data[i]
        key, i = (key, i + 1) if key < 0x80 else _varint(data, i)
        number, wire_type = key >> 3, key & 7
        if wire_type == LENGTH_DELIMITED:
            size = data[i] if i < end else 0x80
            size, i = (size, i + 1) if size < 0x80 else _varint(data, i)
            if i + size > end:
                raise ValueError("truncated")
            count = inner.get(number)
            if count is not None:
                elements += 1 + count(data[i : i + size])
            else:
                elements += 1 + (tag_bytes(data[i : i + size]) if size else 0)
            i += size
        elif wire_type == 0:
            _, i = _varint(data, i)
        elif wire_type == 1:
            i += 8
        elif wire_type == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire_type}")
        if i > end:
            raise ValueError("truncated")
    return elements


def _varint(data: memoryview, i: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if i >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i += 1
        if not byte & 0x80:
            return value, i
        shift += 7
