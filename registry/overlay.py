"""The per-user overlay cache: what this user's programs tuned on misses, so the next process hits.

One results file per target and compiler under the platformdirs cache directory (or
TUNED_KERNELS_CACHE_DIR). Many processes (e.g. torchrun ranks) may add entries at once: each update takes
a file lock, re-reads the file, merges, and replaces it atomically, so nothing is lost or torn.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from filelock import FileLock

from tuned_kernels import model
from tuned_kernels.results import read_results, write_results
from tuned_kernels.results.merge import join

CACHE_ENV = "TUNED_KERNELS_CACHE_DIR"
LOCK_TIMEOUT_S = 60.0


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    import platformdirs

    return Path(platformdirs.user_cache_dir("tuned-kernels", appauthor=False))


def overlay_path(target: model.Target, compiler: model.CompilerFingerprint) -> Path:
    import hashlib

    digest = hashlib.sha256(compiler.compiler_id.encode()).hexdigest()[:16]
    return cache_dir() / f"overlay-{target.arch}-triton{compiler.triton_version}-{digest}.pb"


def read_overlay(path: Path) -> model.Results | None:
    if not path.exists():
        return None
    return read_results(path)


def add_to_overlay(
    path: Path, header: model.Header, entries: Sequence[model.Entry], blobs: Mapping[str, bytes] | None = None
) -> None:
    """Merges `entries` into the overlay at `path` under a file lock (raises OSError on a bad disk)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S):
        held = model.Results(header)
        if path.exists():
            try:
                held = read_results(path)
            except Exception:  # a corrupt overlay is replaced rather than kept failing every process
                held = model.Results(header)
        write_results(path, join(header, [held, model.Results(header, tuple(entries), dict(blobs or {}))]))
