"""The per-user overlay cache: what this user's programs tuned on misses, so the next process hits.

One results file per target and compiler under the platformdirs cache directory (or
TUNED_KERNELS_CACHE_DIR). Many processes (e.g. torchrun ranks) may add entries at once: each update takes
a file lock, re-reads the file, merges, and replaces it atomically, so nothing is lost or torn.

The overlay is the user's data: a file that cannot be read (corrupt, from a newer schema, unreadable) or
that another user owns is never rewritten; `OverlayUnusable` says why, and the registry writes to a file
of its own instead. The file holds at most `MAX_ENTRIES` entries, so an update costs the same at any age;
at the bound the entries tuned longest ago go first (each entry keeps when it was written here).
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from tuned_kernels import model
from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.naming import overlay_file_name
from tuned_kernels.results import read_results, write_results
from tuned_kernels.results.merge import join

CACHE_ENV = "TUNED_KERNELS_CACHE_DIR"
LOCK_TIMEOUT_S = 60.0
MAX_ENTRIES = 4096


class OverlayUnusable(TunedKernelsError):
    """An overlay file this process must leave alone (and write beside)."""


def cache_dir() -> Path:
    """TUNED_KERNELS_CACHE_DIR (a leading `~` is this user's home, as a shell would have it: a value quoted
    or set outside a shell keeps it), else the user cache folder."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(os.path.expanduser(configured))  # never raises (Path.expanduser does for ~nobody)
    import platformdirs

    return Path(platformdirs.user_cache_dir("tuned-kernels", appauthor=False))


def overlay_path(target: model.Target, compiler: model.CompilerFingerprint) -> Path:
    return cache_dir() / overlay_file_name(target.arch, compiler)


def private_path(path: Path) -> Path:
    """Where this user writes when `path` is unusable: a file named for the user, beside it."""
    return path.with_name(f"{path.stem}.uid{_uid()}{path.suffix}")


def read_overlay(path: Path) -> model.Results | None:
    """The overlay's results, None if there is none yet; raises OverlayUnusable for a file to leave alone."""
    if not os.path.lexists(path):
        return None
    owner = path.lstat().st_uid
    if owner != _uid():
        raise OverlayUnusable(f"{path} belongs to another user (uid {owner})")
    try:
        return read_results(path)
    except TunedKernelsError as exc:
        raise OverlayUnusable(str(exc)) from None


def add_to_overlay(
    path: Path,
    header: model.Header,
    entries: Sequence[model.Entry],
    blobs: Mapping[str, bytes] | None = None,
    max_entries: int | None = MAX_ENTRIES,
    supersede: bool = False,
) -> None:
    """Merges `entries` into the overlay at `path` under a file lock (`supersede`: they replace what it
    holds for their slots, even faster entries); raises OverlayUnusable (the file is left as it is) or
    OSError (a bad disk)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock  # imported when first written: 20-70 ms at start-up otherwise

    with FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S):
        _remove_leftovers(path)
        held = read_overlay(path) or model.Results(header)
        if supersede:
            slots = {e.slot for e in entries}
            held = held.with_entries(tuple(e for e in held.entries if e.slot not in slots))
        now = time.time_ns()
        stamped = tuple(e if e.tuned_at_ns else dataclasses.replace(e, tuned_at_ns=now) for e in entries)
        added = model.Results(header, stamped, dict(blobs or {}))
        merged = join(header, [held, added])
        if max_entries is not None:
            merged = bounded(merged, {e.slot for e in entries}, max_entries)
        write_results(path, merged)


def _remove_leftovers(path: Path) -> None:
    """The temporary files of writes to `path` that never finished (a process killed mid-write): every
    writer holds the lock held now, so any such file is a dead writer's."""
    for leftover in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(OSError):
            if leftover.is_file() and not leftover.is_symlink():
                leftover.unlink()


def bounded(results: model.Results, keep: set[model.EntrySlot], max_entries: int) -> model.Results:
    """At most `max_entries` entries: the slots in `keep` (just tuned) first, then the others, the most
    recently tuned first (file order among those of one time)."""
    if len(results.entries) <= max_entries:
        return results
    fresh = [e for e in results.entries if e.slot in keep]
    others = [e for e in results.entries if e.slot not in keep]
    older = sorted(others, key=lambda e: -e.tuned_at_ns)[: max(0, max_entries - len(fresh))]
    return results.with_entries(tuple(sorted((*fresh, *older), key=model.entry_sort_key)))


def _uid() -> int:
    getuid = getattr(os, "getuid", None)
    return getuid() if getuid is not None else 0
