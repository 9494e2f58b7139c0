"""Finds bundles: installed bundle wheels (entry points in the `tuned_kernels.bundles` group) and the
directories or files listed in TUNED_KERNELS_PATH."""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.naming import ENTRY_POINT_GROUP
from tuned_kernels.results.locate import results_files_in

if TYPE_CHECKING:
    from tuned_kernels.results.view import ResultsView

PATH_ENV = "TUNED_KERNELS_PATH"


@dataclass(frozen=True)
class BundleFile:
    source: str  # "tuned-kernels-sm90 0.1.0" or the TUNED_KERNELS_PATH entry
    path: Path


def discover() -> list[BundleFile]:
    found: list[BundleFile] = []
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = ep.dist
        source = f"{dist.metadata['Name']} {dist.version}" if dist is not None else ep.name
        try:
            module = ep.load()
            root = Path(getattr(module, "BUNDLE_DIR", Path(module.__file__ or "").parent))
        except Exception as exc:  # a broken bundle wheel must not break the user's program
            found.append(BundleFile(f"{source} (entry point failed: {exc})", Path("/nonexistent")))
            continue
        found += [BundleFile(source, p) for p in results_files_in(root)]
    for entry in os.environ.get(PATH_ENV, "").split(os.pathsep):
        if entry.strip():
            found += [BundleFile(entry, p) for p in results_files_in(Path(entry))]
    return found


@dataclass(frozen=True)
class OpenedBundles:
    """The installed bundles, opened: found (source, path) pairs, their views by path, and what was wrong."""

    found: tuple[tuple[str, str], ...]
    views: dict[str, ResultsView]
    problems: tuple[str, ...]


def open_installed() -> OpenedBundles:
    """Every bundle `discover` finds, opened for look-ups (header checked); one that cannot be is left out
    with the reason."""
    from tuned_kernels.results.files import open_results

    views: dict[str, ResultsView] = {}
    found, problems = [], []
    for bundle in discover():
        try:
            views[str(bundle.path)] = open_results(bundle.path)
        except TunedKernelsError as exc:
            named = "" if bundle.source == str(bundle.path) else f" of {bundle.source}"
            problems.append(f"skipping bundle{named}: {exc}")
            continue
        found.append((bundle.source, str(bundle.path)))
    return OpenedBundles(tuple(found), views, tuple(problems))
