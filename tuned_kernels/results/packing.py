"""How binary results files (schema v2) hold their entries: each entry serialized on its own and the
serializations concatenated (`packed_entries`), beside three fixed-width arrays with one item per entry:
where it ends (`entry_ends`, little-endian uint32), its kernel (`entry_kernels`, the same) and its slot
digest (`packed_index`, 16 bytes). Opening a bundle then parses its header and tables and copies these byte
strings; a look-up finds its digest in the index at C speed and parses that one entry. (Schema v1 files and
text files keep `entries` as a repeated field, which must be parsed whole: 100k entries took 28 ms of a
64 ms load.) Every offset is checked where it is used: a lying file is a `ValueError` for that entry.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence

from google.protobuf import message

from tuned_kernels.results import results_pb2 as pb

DIGEST_BYTES = 16


def pack(msg: pb.Results, entries: Sequence[pb.Entry], digests: Sequence[bytes]) -> None:
    """Stores `entries` (with their slot digests) in `msg`'s packed fields."""
    serialized = [e.SerializeToString(deterministic=True) for e in entries]
    ends, end = [], 0
    for data in serialized:
        end += len(data)
        ends.append(end)
    msg.packed_entries = b"".join(serialized)
    msg.entry_ends = _little_endian(ends)
    msg.entry_kernels = _little_endian([e.kernel for e in entries])
    msg.packed_index = b"".join(digests)


class Entries:
    """The entries of a parsed `Results`, packed or not, by position: raw messages, their kernel indices
    and the position of a slot digest."""

    def __init__(self, msg: pb.Results) -> None:
        self._msg = msg
        # each read of a bytes field copies it: every one is read once, here
        self._packed, self._index = msg.packed_entries, msg.packed_index
        ends, kernels = msg.entry_ends, msg.entry_kernels
        self.packed = bool(self._packed or self._index or ends or kernels)
        if not self.packed:
            self._count = len(msg.entries)
            return
        if msg.entries:
            raise ValueError("entries: both packed and repeated")
        if len(ends) % 4 or len(kernels) != len(ends):
            raise ValueError("entry_ends, entry_kernels: not one uint32 per entry each")
        self._count = len(ends) // 4
        if len(self._index) != DIGEST_BYTES * self._count:
            raise ValueError("packed_index: not one 16-byte digest per entry")
        self._ends, self._kernels = _uint32s(ends), _uint32s(kernels)
        size = len(self._packed)
        if self._count and (self._ends[-1] != size or max(self._ends) != size):
            raise ValueError("entry_ends: not ending where packed_entries ends")

    def __len__(self) -> int:
        return self._count

    def raw(self, i: int) -> pb.Entry:
        entry: pb.Entry
        if not self.packed:
            entry = self._msg.entries[i]
            return entry
        start, end = (self._ends[i - 1] if i else 0), self._ends[i]
        if not start <= end <= len(self._packed):
            raise ValueError(f"entry_ends[{i}]: outside packed_entries")
        entry = pb.Entry()
        try:
            entry.ParseFromString(self._packed[start:end])
        except message.DecodeError:
            raise ValueError(f"entries[{i}]: does not decode") from None
        return entry

    def kernel_of(self, i: int) -> int:
        return self._kernels[i] if self.packed else int(self._msg.entries[i].kernel)

    def digests(self) -> list[bytes] | None:
        """Every entry's slot digest, in order (None where the file has no index: text files)."""
        if self.packed:
            index = self._index
            return [index[i : i + DIGEST_BYTES] for i in range(0, len(index), DIGEST_BYTES)]
        digests = list(self._msg.index)
        return digests if len(digests) == self._count else None

    def find(self, digest: bytes, start: int = 0) -> int | None:
        """The position of the first entry from `start` on with this slot digest in a packed index (a
        C-speed search), else None; `digests()` answers for an unpacked file."""
        index = self._index
        at = index.find(digest, start * DIGEST_BYTES)
        while at >= 0 and at % DIGEST_BYTES:  # a match straddling two digests: look further
            at = index.find(digest, at + 1)
        return None if at < 0 else at // DIGEST_BYTES


def _little_endian(values: Sequence[int]) -> bytes:
    packed = array("I", values)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def _uint32s(data: bytes) -> array[int]:
    values = array("I")
    values.frombytes(data)
    if sys.byteorder == "big":
        values.byteswap()
    return values
