"""The size and sha256 of a file (`sign` and `lock` hash what they write down; serving hashes the bytes it
read instead, `open_results(digest=True)`)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def digest_of(path: Path) -> tuple[int, str]:
    """The size and sha256 of a file, read in blocks."""
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()
