"""Finds bundles: installed bundle wheels (entry points in the `tuned_kernels.bundles` group) and the
directories or files listed in TUNED_KERNELS_PATH."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from tuned_kernels.errors import TunedKernelsError, one_line
from tuned_kernels.naming import ENTRY_POINT_GROUP
from tuned_kernels.results.locate import results_files_in
from tuned_kernels.results.provenance import provenance_of
from tuned_kernels.signing import SUFFIX as SIGNATURE_SUFFIX
from tuned_kernels.trust import Provenance

if TYPE_CHECKING:
    from tuned_kernels.results.view import ResultsView

PATH_ENV = "TUNED_KERNELS_PATH"


@dataclass(frozen=True)
class BundleFile:
    source: str  # "tuned-kernels-sm90 0.1.0" or the TUNED_KERNELS_PATH entry
    path: Path
    packaged: bool = False  # from an installed bundle package (else named in TUNED_KERNELS_PATH)


@dataclass(frozen=True)
class Found:
    """The bundle files found, and per source that could not be listed, why."""

    files: tuple[BundleFile, ...]
    problems: tuple[str, ...]


def discover() -> Found:
    """Installed bundle packages first (by entry point name: the same order in every process), then
    TUNED_KERNELS_PATH's entries in the order given. A package is code run in the user's program: one that
    fails to import (even by `sys.exit`) or whose directory cannot be listed is left out with the reason."""
    files: list[BundleFile] = []
    problems: list[str] = []
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = ep.dist
        source = f"{dist.metadata['Name']} {dist.version}" if dist is not None else ep.name
        try:
            module = ep.load()
            root = Path(getattr(module, "BUNDLE_DIR", Path(module.__file__ or "").parent))
            files += [BundleFile(source, p, packaged=True) for p in results_files_in(root, bounded=True)]
        except (Exception, SystemExit) as exc:  # a broken bundle package must not break the user's program
            problems.append(f"skipping bundle package {source}: {one_line(f'{type(exc).__name__}: {exc}')}")
    for entry in os.environ.get(PATH_ENV, "").split(os.pathsep):
        if entry.strip():
            files += [BundleFile(entry, p) for p in results_files_in(Path(entry))]
    return Found(tuple(files), tuple(problems))


@dataclass(frozen=True)
class OpenedBundles:
    """The installed bundles, opened: found (source, path) pairs, their views and provenance by path, and
    what was wrong."""

    found: tuple[tuple[str, str], ...]
    views: dict[str, ResultsView]
    problems: tuple[str, ...]
    provenance: dict[str, Provenance] = field(default_factory=dict)


def open_installed() -> OpenedBundles:
    """Every bundle `discover` finds, opened for look-ups (header checked); one that cannot be is left out
    with the reason (said once per source: a package of many broken files is one problem). With
    TUNED_KERNELS_LOCK set, only files whose bytes, as read, the lock names (results/lock.py)."""
    from tuned_kernels.results.files import open_results

    discovered = discover()
    lock, lock_problems = _lock()
    views: dict[str, ResultsView] = {}
    provenance: dict[str, Provenance] = {}
    found: list[tuple[str, str]] = []
    failed: dict[str, list[str]] = {}
    unlocked: list[str] = []
    for bundle in discovered.files if not lock_problems else ():  # an unreadable lock serves none
        signed = os.path.lexists(f"{bundle.path}{SIGNATURE_SUFFIX}")
        try:
            view = open_results(bundle.path, digest=signed or lock is not None)
        except TunedKernelsError as exc:
            failed.setdefault(bundle.source, []).append(str(exc))
            continue
        if lock is not None and view.digest not in lock:
            unlocked.append(str(bundle.path))
            continue
        views[str(bundle.path)] = view
        found.append((bundle.source, str(bundle.path)))
        built_at = view.header.created_at if lock is None else None  # a lock pins the build it names
        provenance[str(bundle.path)] = provenance_of(
            bundle.path, bundle.packaged, view.digest, view.read_from, built_at
        )
    problems = [*discovered.problems, *lock_problems]
    if unlocked:
        more = f" and {len(unlocked) - 1} more" if len(unlocked) > 1 else ""
        problems.append(
            f"not serving {one_line(unlocked[0], 120)}{more}: not in the lock {one_line(_lock_name(), 120)}"
        )
    for source, reasons in failed.items():
        named = "" if reasons[0].startswith(source) else f" of {source}"
        more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
        problems.append(f"skipping bundle{named}: {reasons[0]}{more}")
    return OpenedBundles(tuple(found), views, tuple(problems), provenance)


def _lock_name() -> str:
    from tuned_kernels.results.lock import ENV

    return os.environ.get(ENV, "").strip()


def _lock() -> tuple[frozenset[tuple[int, str]] | None, list[str]]:
    """The (size, sha256) pairs TUNED_KERNELS_LOCK names (None: no lock set); a lock that cannot be read
    lets no bundle through, said once."""
    from tuned_kernels.results.lock import ENV, read_lock

    name = _lock_name()
    if not name:
        return None, []
    try:
        return read_lock(Path(name)), []
    except TunedKernelsError as exc:
        return frozenset(), [f"{ENV}: {exc}; no bundle is served"]
