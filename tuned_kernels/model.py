"""The data model shared by hardware/, aot/, packager/ and registry/: pure values, no I/O.

A `Target` names a GPU type, a `CompilerFingerprint` the compiler that built for it; together they name a
bundle. An `Entry` is one tuning decision: for a kernel (`KernelIdentity`) and a tuning key exactly as
Triton's autotuner forms it, the best `Config` and how it was found.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Vendor = Literal["nvidia", "amd", "cpu"]
Scalar = int | float | bool | str | None
SCHEMA_VERSION = 2  # 2: binary files pack their entries (results/packing.py)


@dataclass(frozen=True)
class Target:
    """A GPU type (or the cpu interpreter target): what a bundle is built for."""

    vendor: Vendor
    arch: str
    device_name: str = ""
    multiprocessor_count: int = 0
    memory_bytes: int = 0
    driver_version: str = ""
    runtime_version: str = ""


@dataclass(frozen=True)
class CompilerFingerprint:
    """The compiler that produced kernels and timings. Two fingerprints match when `compiler_id` is equal."""

    triton_version: str
    triton_hash: str
    backend_hash: str = ""
    backend_versions: tuple[tuple[str, str], ...] = ()
    torch_version: str = ""

    @property
    def compiler_id(self) -> str:
        """What must be equal for kernels and timings to carry over: Triton itself and its backend."""
        return f"{self.triton_version}:{self.triton_hash}:{self.backend_hash}"

    def describe(self) -> str:
        extras = ", ".join(f"{k} {v}" for k, v in self.backend_versions)
        return f"triton {self.triton_version}" + (f" ({extras})" if extras else "")


class Producer(enum.Enum):
    TUNE = "tune"
    CAPTURE = "capture"
    MERGE = "merge"


class FoundBy(enum.Enum):
    EXHAUSTIVE = "exhaustive"
    SEEDED = "seeded"
    CAPTURED = "captured"
    ONLINE = "online"
    PREDICTED = "predicted"  # not timed: served on a miss from a prediction, to be tuned later


class IdentityScheme(enum.Enum):
    """How a kernel identity's `source_hash` was made (files say so per kernel)."""

    # A digest of the kernel's syntax tree, its helpers' and the globals it reads: line numbers, comments
    # and formatting do not count (source_identity.py).
    SOURCE = "source"
    # Files made before: Triton's `JITFunction.cache_key`, which counts the kernel's first line (and its
    # helpers'), or the sha256 of a function's source text; names of the script being run are `__main__.*`.
    TRITON_CACHE_KEY = "triton-cache-key"


@dataclass(frozen=True)
class KernelIdentity:
    """Which kernel an entry tunes: its qualified name and a hash of its source. A running kernel also
    carries its `previous` identity (the older scheme's), so entries stored under that one still apply."""

    name: str
    source_hash: str
    param_names: tuple[str, ...] = ()
    scheme: IdentityScheme = IdentityScheme.SOURCE
    previous: KernelIdentity | None = field(default=None, compare=False, repr=False)

    def all(self) -> tuple[KernelIdentity, ...]:
        """This identity, then the previous one (where there is one): what stored entries may be under."""
        return (self,) if self.previous is None else (self, self.previous)


@dataclass(frozen=True)
class Config:
    """A launch configuration, as `triton.Config` holds it (kwargs sorted by name)."""

    kwargs: tuple[tuple[str, Scalar], ...]
    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: int | None = None

    @staticmethod
    def of(kwargs: Mapping[str, Scalar], **launch: int | None) -> Config:
        return Config(tuple(sorted(kwargs.items())), **launch)  # type: ignore[arg-type]

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.kwargs]
        parts += [f"warps={self.num_warps}", f"stages={self.num_stages}"]
        if self.num_ctas != 1:
            parts.append(f"ctas={self.num_ctas}")
        if self.maxnreg is not None:
            parts.append(f"maxnreg={self.maxnreg}")
        return " ".join(parts)


@dataclass(frozen=True)
class Timing:
    config: Config
    time_ms: float
    resident: int = 0  # programs of this config one multiprocessor held at once (0: not known)


@dataclass(frozen=True)
class Rejection:
    config: Config
    reason: str


@dataclass(frozen=True)
class ArtifactFile:
    """One file of a compiled kernel; its bytes live in `Results.blobs` under `sha256`."""

    name: str
    sha256: str
    size_bytes: int


@dataclass(frozen=True)
class Artifact:
    """A compiled kernel: the files Triton's compile cache holds under `cache_key` (its hex hash)."""

    cache_key: str
    gpu_target: str  # "cuda:90:32", "hip:gfx942:64"
    files: tuple[ArtifactFile, ...]
    config: Config
    # Its arguments' types as Triton's host launcher takes them (Triton's kernel `signature`, in order), so
    # the launcher can be built before the first launch; () when not known (or a tuple argument).
    host_signature: tuple[str, ...] = ()

    @property
    def size_bytes(self) -> int:
        return sum(f.size_bytes for f in self.files)


TuningKey = tuple[Scalar, ...]


@dataclass(frozen=True)
class Entry:
    """One tuning decision: for `kernel` at `key`, `best` won."""

    kernel: KernelIdentity
    key: TuningKey
    best: Config
    timings: tuple[Timing, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    found_by: FoundBy = FoundBy.EXHAUSTIVE
    configs_benchmarked: int = 0
    artifacts: tuple[Artifact, ...] = ()
    tuned_at_ns: int = 0  # the overlay's entries: when tuned here (its bound keeps the latest); 0: unknown

    @property
    def best_time_ms(self) -> float:
        """The winner's time; infinity where none was recorded, so a timed entry always beats it."""
        for timing in self.timings:
            if timing.config == self.best:
                return timing.time_ms
        return float("inf")

    @property
    def slot(self) -> EntrySlot:
        return slot_of(self.kernel, self.key)


EntrySlot = tuple[str, str, TuningKey]  # where an entry sits: kernel name, kernel source hash, tuning key


def slot_of(kernel: KernelIdentity, key: TuningKey) -> EntrySlot:
    """The one way a slot is formed (bundles are keyed by it, and their index by `slot_digest` of it)."""
    return (kernel.name, kernel.source_hash, key)


@dataclass(frozen=True)
class Header:
    target: Target
    compiler: CompilerFingerprint
    producer: Producer
    tool_version: str
    created_at: str
    schema_version: int = SCHEMA_VERSION


@dataclass(frozen=True)
class Results:
    header: Header
    entries: tuple[Entry, ...] = field(default_factory=tuple)
    blobs: Mapping[str, bytes] = field(default_factory=dict)  # artifact file contents by sha256

    def with_entries(self, entries: tuple[Entry, ...]) -> Results:
        """These entries, keeping only the blobs their artifacts still name."""
        return Results(self.header, entries, referenced_blobs(entries, self.blobs))


def slot_digest(slot: EntrySlot) -> bytes:
    """A 16-byte digest of an entry's slot: the look-up key of a bundle's index (types kept: 1 != 1.0)."""
    name, source_hash, key = slot
    text = "\x00".join([name, source_hash, *(f"{type(v).__name__}:{v!r}" for v in key)])
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def referenced_blobs(entries: tuple[Entry, ...], blobs: Mapping[str, bytes]) -> dict[str, bytes]:
    names = sorted({f.sha256 for e in entries for a in e.artifacts for f in a.files})
    return {sha: blobs[sha] for sha in names if sha in blobs}


SortToken = tuple[int, float, str]


def key_sort_token(value: Scalar) -> SortToken:
    """A total order over mixed-type key elements, so merged files come out in a reproducible order."""
    order = {type(None): 0, bool: 1, int: 2, float: 3, str: 4}[type(value)]
    number = float(value) if isinstance(value, (int, float)) else 0.0
    return (order, number, value if isinstance(value, str) else "")


def entry_sort_key(entry: Entry) -> tuple[str, str, tuple[SortToken, ...]]:
    return (entry.kernel.name, entry.kernel.source_hash, tuple(key_sort_token(v) for v in entry.key))
