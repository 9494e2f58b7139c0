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
    with the reason (said once per source: a package of many broken files is one problem)."""
    from tuned_kernels.results.files import open_results

    discovered = discover()
    files, left_out = locked_only(discovered.files)
    views: dict[str, ResultsView] = {}
    provenance: dict[str, Provenance] = {}
    found: list[tuple[str, str]] = []
    failed: dict[str, list[str]] = {}
    for bundle in files:
        try:
            views[str(bundle.path)] = open_results(bundle.path)
        except TunedKernelsError as exc:
            failed.setdefault(bundle.source, []).append(str(exc))
            continue
        found.append((bundle.source, str(bundle.path)))
        provenance[str(bundle.path)] = provenance_of(bundle.path, bundle.packaged)
    problems = [*discovered.problems, *left_out]
    for source, reasons in failed.items():
        named = "" if reasons[0].startswith(source) else f" of {source}"
        more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
        problems.append(f"skipping bundle{named}: {reasons[0]}{more}")
    return OpenedBundles(tuple(found), views, tuple(problems), provenance)


def locked_only(files: tuple[BundleFile, ...]) -> tuple[list[BundleFile], list[str]]:
    """With TUNED_KERNELS_LOCK set, the files whose exact bytes the lock names, and what was left out (one
    line); a lock that cannot be read serves no bundle. Unset: every file."""
    from tuned_kernels.results.lock import ENV, read_lock
    from tuned_kernels.results.provenance import digest_of

    named = os.environ.get(ENV, "").strip()
    if not named:
        return list(files), []
    try:
        locked = read_lock(Path(named))
    except TunedKernelsError as exc:
        return [], [f"{ENV}: {exc}; no bundle is served"] if files else []
    kept: list[BundleFile] = []
    other: list[BundleFile] = []
    for bundle in files:
        try:
            (kept if digest_of(bundle.path) in locked else other).append(bundle)
        except OSError:
            other.append(bundle)
    if not other:
        return kept, []
    more = f" and {len(other) - 1} more" if len(other) > 1 else ""
    return kept, [
        f"not serving {one_line(str(other[0].path), 120)}{more}: not in the lock {one_line(named, 120)}"
    ]
