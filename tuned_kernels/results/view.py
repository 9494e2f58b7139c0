"""A results file opened for look-ups: the header and kernel table are decoded (and validated) at once,
entries one at a time when asked for, so opening a bundle of any size costs a parse, not a conversion.

Binary files carry an index of slot digests (see results.proto); text files are indexed on first use.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import NoReturn

from tuned_kernels import model
from tuned_kernels.errors import BadEntryError, ResultsFormatError
from tuned_kernels.results import codec, packing
from tuned_kernels.results import results_pb2 as pb

SCANS_BEFORE_DICT = 4


class ResultsView:
    def __init__(self, msg: pb.Results, path: str) -> None:
        self.path = path
        self._msg = msg
        try:
            self.header = codec.header_from_pb(msg)
            self._tables = codec.tables_from_pb(msg)
            codec.check_blob_keys(msg)  # as `inspect` does: a file it refuses is not served either
            self._stored = packing.Entries(msg)
        except ValueError as exc:
            raise ResultsFormatError(path, str(exc)) from None
        self._digests: list[bytes] | None = None
        self._slots: dict[bytes, int] | None = None
        self._twice: set[bytes] = set()  # digests of keys that two entries hold
        self._scans = 0
        self._named: dict[str, list[model.Entry]] = {}
        self._results: model.Results | None = None
        self.left_out: dict[int, str] = {}  # entries that cannot be decoded, by position: why (never served)
        self.digest: tuple[int, str] | None = None  # size and sha256 of the bytes read, where asked for
        self.read_from: tuple[int, int] | None = None  # the device and inode of the file they were read from

    def __len__(self) -> int:
        return len(self._stored)

    @property
    def has_blobs(self) -> bool:
        return len(self._msg.blobs) > 0

    def blob(self, sha256: str) -> bytes | None:
        """The bytes an artifact file names (unchecked), without decoding the rest of the file."""
        data: bytes | None = self._msg.blobs.get(sha256)
        return data

    def lookup(self, slot: model.EntrySlot) -> model.Entry | None:
        """The entry for `slot`, or None; a digest that lies is a ResultsFormatError."""
        i = self._position(model.slot_digest(slot))
        if i is None:
            return None
        entry = self._entry(i)
        if entry.slot != slot:  # 16-byte digests do not collide by chance: the index is wrong
            raise ResultsFormatError(self.path, f"index[{i}] does not match entries[{i}]")
        return entry

    def entries_named(self, kernel_name: str) -> list[model.Entry]:
        """Every entry for kernels of this name, any source hash (for nearest keys and stale seeds); decoded
        once per name."""
        if kernel_name not in self._named:
            refs = {i for i, k in enumerate(self._tables.kernels) if k.name == kernel_name}
            stored = self._stored
            self._named[kernel_name] = [
                entry for _, entry in self._good(i for i in range(len(stored)) if stored.kernel_of(i) in refs)
            ]
        return self._named[kernel_name]

    def source_hashes(self, kernel_name: str) -> frozenset[str]:
        """The source hashes this file holds a kernel of this name under (its kernel table: no entry is
        decoded)."""
        return frozenset(k.source_hash for k in self._tables.kernels if k.name == kernel_name)

    def kernels(self) -> tuple[model.KernelIdentity, ...]:
        """The kernels this file holds entries for (its kernel table: no entry is decoded)."""
        return tuple(self._tables.kernels)

    def results(self) -> model.Results:
        """Every entry, decoded and validated (once: the warm-up and the registry both ask)."""
        if self._results is None:
            try:
                self._results = codec.results_from_pb(self._msg, self._stored)
            except ValueError as exc:
                raise ResultsFormatError(self.path, str(exc)) from None
        return self._results

    def served_results(self) -> model.Results:
        """Every entry that decodes, the others left out (as a look-up leaves them out: `left_out`)."""
        try:
            return self.results()
        except ResultsFormatError:
            good = self._good(range(len(self._stored)))
            try:
                codec.check_one_entry_per_key(good)
            except ValueError as exc:
                raise ResultsFormatError(self.path, str(exc)) from None
            return model.Results(self.header, tuple(entry for _, entry in good), dict(self._msg.blobs))

    def _good(self, positions: Iterable[int]) -> list[tuple[int, model.Entry]]:
        """The entries at these positions that decode, with their positions (the others: `left_out`)."""
        good = []
        for i in positions:
            try:
                good.append((i, self._entry(i)))
            except BadEntryError:
                continue
        return good

    def _position(self, digest: bytes) -> int | None:
        """Where the entry with this slot digest is: the first few look-ups search the packed index or scan
        the digest list (C speed, a few ms for 100k entries), later ones use a dict built once (which costs
        more than a search)."""
        if self._slots is not None:
            if digest in self._twice:
                self._two_for_one_key(digest)
            return self._slots.get(digest)
        if self._stored.packed and self._scans < SCANS_BEFORE_DICT:
            self._scans += 1
            found = self._stored.find(digest)
            if found is not None and self._stored.find(digest, found + 1) is not None:
                self._two_for_one_key(digest)
            return found
        digests = self._digest_list()
        self._scans += 1
        if self._scans > SCANS_BEFORE_DICT:
            self._slots = dict(zip(digests, range(len(digests)), strict=True))
            if len(self._slots) < len(digests):
                self._twice = {d for d, n in Counter(digests).items() if n > 1}
            return self._position(digest)
        if digests.count(digest) > 1:
            self._two_for_one_key(digest)
        try:
            return digests.index(digest)
        except ValueError:
            return None

    def _two_for_one_key(self, digest: bytes) -> NoReturn:
        """Two entries for one key: refused as reading the file whole refuses it (`codec.two_for_one_key`)."""
        first, second = [i for i, d in enumerate(self._digest_list()) if d == digest][:2]
        raise ResultsFormatError(self.path, codec.two_for_one_key(first, second))

    def _digest_list(self) -> list[bytes]:
        if self._digests is None:
            digests = self._stored.digests()
            if digests is None:  # a text file, or one written without an index
                digests = [self._slot_digest(i) for i in range(len(self._stored))]
            self._digests = digests
        return self._digests

    def _slot_digest(self, i: int) -> bytes:
        try:
            return model.slot_digest(self._entry(i).slot)
        except BadEntryError:
            return b""  # no slot's digest: an entry that cannot be decoded is never found

    def _entry(self, i: int) -> model.Entry:
        try:
            return codec.entry_from_pb(self._stored.raw(i), self._tables, f"entries[{i}]")
        except ValueError as exc:
            self.left_out[i] = str(exc)
            raise BadEntryError(self.path, str(exc)) from None
