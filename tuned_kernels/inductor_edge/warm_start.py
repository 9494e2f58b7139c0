"""A capture on a machine whose Inductor caches are already warm (the program ran before, with or without
tuned-kernels) times nothing again: the capture's private cache directory starts with what Inductor tuned
in the user's own, and the bundle gets the same entries a capture from empty caches would.

Two kinds of Inductor's tuning results are carried over, never its graphs (the capture compiles those, so
that every GEMM choice and fusion is seen and recorded):
- `cache/<system hash>`: its template autotuning's timings of each GEMM's choices (Inductor reads them
  instead of benchmarking, and hands them to the feedback the capture records winners from);
- `<2>/<hash>.best_config`: each generated kernel's tuned config. Only those the program reads (recorded
  by the look-up, `autotune_cache.record_read`) or rewrites go into the bundle: the user's cache holds other programs'.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from pathlib import Path

from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.inductor_edge import autotune_cache
from tuned_kernels.results.files import read_regular_file
from tuned_kernels.whole_match import matches

MAX_SEEDED = 20_000  # .best_config files carried over at most (the newest)
MAX_TIMINGS_BYTES = 64 << 20  # a template autotuning cache file larger than this is left behind


def seed(user_cache: Path, private: Path) -> dict[str, str]:
    """Inductor's tuning results from `user_cache` into `private`; returns the `.best_config` files carried
    over (relative path -> sha256). A file that cannot be read is left behind: the capture tunes it."""
    if not user_cache.is_dir() or user_cache.resolve() == private.resolve():
        return {}
    for timings in sorted(user_cache.glob("cache/*")):
        with contextlib.suppress(OSError):
            if timings.is_file() and timings.stat().st_size <= MAX_TIMINGS_BYTES:
                (private / "cache").mkdir(parents=True, exist_ok=True)
                shutil.copyfile(timings, private / "cache" / timings.name)
    found = []
    for path in user_cache.glob("*/*.best_config"):
        relative = path.relative_to(user_cache).as_posix()
        with contextlib.suppress(OSError):
            if matches(autotune_cache.RELATIVE_PATH, relative) and path.is_file():
                found.append((path.stat().st_mtime, relative))
    seeded = {}
    for _, relative in sorted(found, reverse=True)[:MAX_SEEDED]:
        with contextlib.suppress(
            OSError, TunedKernelsError
        ):  # unreadable, too large, not a file: left behind
            data = read_regular_file(str(user_cache / relative), autotune_cache.MAX_FILE_BYTES)
            (private / relative).parent.mkdir(parents=True, exist_ok=True)
            (private / relative).write_bytes(data)
            seeded[relative] = hashlib.sha256(data).hexdigest()
    return seeded


def used(private: Path, seeded: dict[str, str]) -> set[str]:
    """The `.best_config` files under `private` that belong in the bundle: those the program wrote, and
    those carried over that it read (or rewrote)."""
    try:
        read = set((private / autotune_cache.READS).read_text().split())
    except (OSError, ValueError):
        read = set()
    kept = set()
    for path in private.glob("*/*.best_config"):
        relative = path.relative_to(private).as_posix()
        with contextlib.suppress(OSError):
            if relative in read or seeded.get(relative) != hashlib.sha256(path.read_bytes()).hexdigest():
                kept.add(relative)
    return kept
