"""The graph files tuned-kernels put into Inductor's cache directory, recorded beside them
(`tuned-kernels-placed.json`: relative path -> sha256), so that they leave again when no bundle offers
them any more: the bundle removed, no longer trusted with code, or `TUNED_KERNELS_COMPILED=0`. A file is
taken out only while it still holds the bytes placed (one Inductor or the user rewrote stays). The record
is rewritten atomically under a file lock; a record that cannot be read is started afresh (the files it
named stay, as before this record existed)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

RECORD = "tuned-kernels-placed.json"
MAX_RECORD_BYTES = 8 << 20
LOCK_SECONDS = 10.0


def read_record(cache_dir: Path) -> dict[str, str]:
    path = cache_dir / RECORD
    try:
        with open(path, "rb") as f:
            if not os.path.isfile(path) or os.fstat(f.fileno()).st_size > MAX_RECORD_BYTES:
                return {}
            held = json.loads(f.read())
    except (OSError, ValueError):
        return {}
    if not isinstance(held, dict):
        return {}
    return {k: v for k, v in held.items() if isinstance(k, str) and isinstance(v, str)}


def write_record(cache_dir: Path, record: Mapping[str, str]) -> None:
    path = cache_dir / RECORD
    temporary = path.with_name(f".{RECORD}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(dict(sorted(record.items())), indent=0))
    os.replace(temporary, path)


def take_out(
    cache_dir: Path, record: Mapping[str, str], kept: Mapping[str, str]
) -> tuple[dict[str, str], int]:
    """Removes the recorded files not in `kept` (relative path -> sha256) that still hold what was placed;
    returns the record of what stays and how many files were removed."""
    stays, removed = {}, 0
    for relative, sha in record.items():
        if kept.get(relative) == sha:
            stays[relative] = sha
            continue
        path = cache_dir / relative
        if ".." in Path(relative).parts or Path(relative).is_absolute():
            continue  # never a path outside the cache directory, whatever the record says
        try:
            if path.is_file() and not path.is_symlink() and _sha256(path) == sha:
                path.unlink()
                removed += 1
        except OSError:
            stays[relative] = sha  # tried again next time
    return stays, removed


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
