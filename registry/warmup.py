"""The registry's warm-up: what the first launches would otherwise wait for, done on a background thread
as soon as serving is enabled (with `TUNED_KERNELS=1`, when the program imports Triton or Inductor,
usually seconds before its first kernel). It opens the installed bundles for the registry and has Triton
build the host modules their compiled kernels need (`triton_edge.host_modules`). It touches no GPU (no
CUDA context: the program may still fork), never blocks a launch (a launch that comes first builds what it
needs itself, as Triton always did), and skips bundles of another Triton version (nothing of theirs is
served)."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from tuned_kernels.errors import TunedKernelsError, one_line
from tuned_kernels.triton_edge import host_modules
from tuned_kernels.triton_edge.import_state import triton_imported
from tuned_kernels.triton_edge.interpreter import interpreting

if TYPE_CHECKING:
    from tuned_kernels.results.discovery import OpenedBundles
    from tuned_kernels.results.view import ResultsView


class Warmable(Protocol):
    """What the warm-up needs of the registry: its bundles, opened once, and where to say what it built."""

    host_modules: host_modules.BuildReport | None

    def opened_bundles(self) -> OpenedBundles: ...


def start(registry: Warmable) -> threading.Thread | None:
    """Starts the warm-up of `registry` (not under Triton's interpreter: nothing is built there)."""
    if interpreting():
        return None
    thread = threading.Thread(target=_warm, args=(registry,), name="tuned-kernels-warmup", daemon=True)
    thread.start()
    return thread


def _warm(registry: Warmable) -> None:
    try:
        opened = registry.opened_bundles()
        if not any(view.has_blobs for view in opened.views.values()) or not triton_imported():
            return
        from triton import __version__

        specs, skipped = host_modules.distinct(launcher_specs(opened.views.values(), __version__))
        if specs:
            built = host_modules.build(specs, jobs=min(4, os.cpu_count() or 1))
            registry.host_modules = dataclasses.replace(built, skipped=skipped)
    except Exception as exc:  # a warm-up that fails leaves the work to the launches, as without it
        registry.host_modules = host_modules.BuildReport(failed=1, first_failure=one_line(str(exc)))


def launcher_specs(views: Iterable[ResultsView], this_triton: str) -> Iterator[host_modules.LauncherSpec]:
    """The launchers of the compiled kernels in bundles of this Triton version. (The launchers' source is
    this Triton's, from the kernels' argument types; a bundle whose kernels are then not served, its build
    differing, costs builds that go unused. Its build hash is not checked: computing it takes as long as a
    build.)"""
    for view in views:
        if not view.has_blobs or view.header.compiler.triton_version != this_triton:
            continue
        try:
            results = view.served_results()
        except TunedKernelsError:  # a file-level fault: the registry says so when it loads
            continue
        for entry in results.entries:
            for artifact in entry.artifacts:
                spec = host_modules.launcher_spec(artifact, results.blobs)
                if spec is not None:
                    yield spec
