"""The graph files tuned-kernels put into Inductor's cache directory, recorded beside them
(`tuned-kernels-placed.json`: relative path -> "sha256 bundle-path"), so that they leave again when their
bundle no longer offers them: the bundle file gone, or found by this process and not offering them (no
longer trusted with code, changed, or `TUNED_KERNELS_COMPILED=0`). The files of a bundle this process does
not know (another program's, sharing the cache directory) stay. A file is taken out only while it still
holds the bytes placed (one Inductor or the user rewrote stays), and only at a path Inductor's caches use.
The record is rewritten atomically under a file lock; a record that cannot be read is started afresh (the
files it named stay, as before this record existed)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Collection, Mapping
from pathlib import Path

RECORD = "tuned-kernels-placed.json"
MAX_RECORD_BYTES = 8 << 20
LOCK_SECONDS = 10.0


def read_record(cache_dir: Path) -> dict[str, str]:
    path = cache_dir / RECORD
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not hang the program
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_RECORD_BYTES:
                return {}
            held = json.loads(f.read())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(held, dict):
        return {}
    return {k: v for k, v in held.items() if isinstance(k, str) and isinstance(v, str)}


def write_record(cache_dir: Path, record: Mapping[str, str]) -> None:
    path = cache_dir / RECORD
    temporary = path.with_name(f".{RECORD}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(dict(sorted(record.items())), indent=0))
    os.replace(temporary, path)


def entry(sha256: str, bundle: str) -> str:
    return f"{sha256} {bundle}"


def take_out(
    cache_dir: Path, record: Mapping[str, str], kept: Mapping[str, str], known: Collection[str]
) -> tuple[dict[str, str], int]:
    """Removes the recorded files not in `kept` (relative path -> sha256) whose bundle is gone or `known`
    (found by this process), while they still hold what was placed; returns the record of what stays and
    how many files were removed."""
    from tuned_kernels.inductor_edge.graphs import kind_of

    stays, removed = {}, 0
    for relative, value in record.items():
        sha, _, bundle = value.partition(" ")
        if kept.get(relative) == sha or (bundle and bundle not in known and os.path.isfile(bundle)):
            stays[relative] = value
            continue
        path = cache_dir / relative
        if kind_of(relative) is None:
            continue  # never a path Inductor's caches do not use (nor one outside the cache directory)
        try:
            if path.is_file() and not path.is_symlink() and _sha256(path) == sha:
                path.unlink()
                removed += 1
        except OSError:
            stays[relative] = value  # tried again next time
    return stays, removed


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
