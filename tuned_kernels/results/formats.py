"""Which encoding a results file uses, chosen by its extension as XLA does. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from tuned_kernels.errors import ResultsFormatError

TEXT_SUFFIXES = (".textproto", ".txt")
BINARY_SUFFIXES = (".pb", ".binpb")
COMPRESSED_SUFFIX = ".zst"


@dataclass(frozen=True)
class FileFormat:
    text: bool
    compressed: bool


def format_for(path: str) -> FileFormat:
    """`.textproto`/`.txt` is text, `.pb`/`.binpb` binary; a trailing `.zst` adds zstd compression."""
    name = path.lower()
    compressed = name.endswith(COMPRESSED_SUFFIX)
    if compressed:
        name = name[: -len(COMPRESSED_SUFFIX)]
    if name.endswith(TEXT_SUFFIXES):
        return FileFormat(text=True, compressed=compressed)
    if name.endswith(BINARY_SUFFIXES):
        return FileFormat(text=False, compressed=compressed)
    known = ", ".join(s + z for s in TEXT_SUFFIXES + BINARY_SUFFIXES for z in ("", COMPRESSED_SUFFIX))
    raise ResultsFormatError(path, f"unknown extension; expected one of {known}")
