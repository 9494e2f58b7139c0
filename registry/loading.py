"""What a registry serves from, built once: this machine's target and compiler, the installed bundles
selected for them (the others rejected with a reason), their entries and compiled kernels, the overlay, and
the sink a measured miss goes to. Touches the disk and the GPU's identity, never a kernel."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tuned_kernels.registry.forking import in_every_forked_child
from tuned_kernels.registry.graph_files import GraphFile, graph_files, torch_keys
from tuned_kernels.registry.settings import Settings
from tuned_kernels.registry.sinks import CaptureSink, OverlaySink, Sink
from tuned_kernels.registry.sources import LoadedSources, say_left_out

from tuned_kernels import model
from tuned_kernels.errors import TunedKernelsError, one_line
from tuned_kernels.inductor_edge import graphs
from tuned_kernels.selection import BundleCandidate, Selection, select_bundles
from tuned_kernels.timestamps import utc_now
from tuned_kernels.triton_edge import cache_manager
from tuned_kernels.triton_edge.interpreter import interpreting
from tuned_kernels.trust import Origin, Provenance, why_no_code

if TYPE_CHECKING:  # the reader (protobuf, zstandard) is imported when the registry loads, not before
    from tuned_kernels.results.discovery import OpenedBundles
    from tuned_kernels.results.view import ResultsView

log = logging.getLogger("tuned_kernels")
Problem = Callable[[str], None]


class BundleOpener:
    """The installed bundles, discovered and opened once (by whichever thread asks first: the warm-up opens
    them in the background, before the first kernel needs them); no GPU is touched."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._opened: OpenedBundles | None = None
        in_every_forked_child(self._after_fork)

    def _after_fork(self) -> None:
        """In a forked child the warm-up thread is gone, and may have held the lock of the bundles it was
        opening: the child opens them itself."""
        self.lock = threading.Lock()

    def opened(self) -> OpenedBundles:
        from tuned_kernels.results.discovery import open_installed

        with self.lock:
            if self._opened is None:
                self._opened = open_installed()
            return self._opened


@dataclass
class Loaded:
    target: model.Target | None = None  # None: the registry could not start (every key is a miss)
    compiler: model.CompilerFingerprint | None = None
    selection: Selection = field(default_factory=lambda: Selection((), (), ()))
    sources: LoadedSources = field(default_factory=LoadedSources)
    store: cache_manager.ArtifactStore = field(default_factory=cache_manager.ArtifactStore)
    graphs: list[GraphFile] = field(default_factory=list)  # compiled torch.compile graphs offered here
    torch_keys: list[model.Entry] = field(default_factory=list)  # Inductor's torch source hash, by wheel
    overlay_path: Path | None = None
    sink: Sink | None = None  # None: nothing is written

    def header(self, producer: model.Producer) -> model.Header:
        """The header of a file this process writes: this target and compiler, now."""
        from tuned_kernels.version import TOOL_VERSION

        if self.target is None or self.compiler is None:
            raise TunedKernelsError("this machine's target or compiler is unknown: nothing can be written")
        return model.Header(self.target, self.compiler, producer, TOOL_VERSION, utc_now())


def load(settings: Settings, opened: OpenedBundles, on_problem: Problem) -> Loaded:
    from tuned_kernels.hardware import compiler_fingerprint, detect

    from tuned_kernels.results import overlay

    target = detect()
    compiler = compiler_fingerprint(target)
    for message in opened.problems:
        on_problem(message)
    views = opened.views
    found = [BundleCandidate(source, path, views[path].header) for source, path in opened.found]
    selection = select_bundles(target, compiler, found)
    shared = overlay.overlay_path(target, compiler)
    sources = LoadedSources(
        [views[c.path] for c in selection.selected],
        [views[c.path] for c in selection.stale],
        str(shared),
        on_problem,
    )
    loaded = Loaded(target, compiler, selection, sources)
    header = loaded.header(model.Producer.CAPTURE)  # the schema's producers: tune, capture, merge

    code = code_bundles(selection, opened, settings.trusted_keys, on_problem) if settings.compiled else []
    store = _compiled_kernels(code, views, target, compiler, sources)
    store.on_problem = on_problem
    if settings.capture is None:
        selected = [(c.name, views[c.path]) for c in code if views[c.path] in sources.bundles]
        loaded.graphs = graph_files(selected, target, compiler, on_problem)
        loaded.torch_keys = torch_keys(selected) if loaded.graphs else []
    capture = None if settings.capture is None else CaptureSink(settings.capture, header, on_problem)
    recorder = capture.keep_compiled if capture is not None and not interpreting() else None
    if len(store) or recorder is not None:
        cache_manager.install(store, recorder)
    overlay_path, usable = _open_overlay(shared, sources, on_problem)
    sources.local_name = str(overlay_path)
    sink: Sink = capture or OverlaySink(overlay_path if usable else None, header, on_problem)
    _log_selection(selection, on_problem)
    loaded.store, loaded.overlay_path, loaded.sink = store, overlay_path, sink
    return loaded


def _open_overlay(shared: Path, sources: LoadedSources, on_problem: Problem) -> tuple[Path, bool]:
    """The overlay this process reads and writes, its entries added to `sources`: the shared file, or this
    user's own beside it when the shared one must be left alone (unreadable, from a newer schema, another
    user's); (the shared path, False) when neither is usable (what is tuned stays in this process)."""
    from tuned_kernels.results import overlay

    try:
        if shared.parent.exists() and not shared.parent.is_dir():  # a file: the settings' check named it
            return shared, False
    except OSError as exc:  # a name too long for the file system, say: the bundles serve all the same
        on_problem(
            f"cannot use the overlay folder: {one_line(str(exc), 160)}; tuned configs stay in this process"
        )
        return shared, False
    for path in (shared, overlay.private_path(shared)):
        try:
            held = overlay.read_overlay(path)
        except (TunedKernelsError, OSError) as exc:  # ours say the path once; the file system's, cut
            said = str(exc) if isinstance(exc, TunedKernelsError) else one_line(str(exc), 300)
            on_problem(f"leaving the overlay cache as it is: {said}")
            continue
        if held is not None:
            sources.add_local(held.entries)
        return path, True
    return shared, False


def code_bundles(
    selection: Selection, opened: OpenedBundles, trusted_keys: frozenset[str] | None, on_problem: Problem
) -> list[BundleCandidate]:
    """The selected bundles whose code (compiled kernels, torch.compile graphs) may reach Triton, Inductor
    or the loader: the one gate, by `trust.why_no_code`. A bundle holding code it may not serve is said
    once; its configs are served all the same."""
    allowed = []
    for candidate in selection.selected:
        provenance = opened.provenance.get(
            candidate.path, Provenance(Origin.SHARED_FILE, "its origin is unknown")
        )
        why = why_no_code(provenance, trusted_keys)
        if why is None:
            allowed.append(candidate)
        elif opened.views[candidate.path].has_blobs:
            on_problem(
                f"serving only the configs of {candidate.name}: {why}; its compiled kernels and graphs are not run"
            )
    return allowed


def _compiled_kernels(
    code: list[BundleCandidate],
    views: Mapping[str, ResultsView],
    target: model.Target,
    compiler: model.CompilerFingerprint,
    sources: LoadedSources,
) -> cache_manager.ArtifactStore:
    store = cache_manager.ArtifactStore()
    for candidate in code:
        view = views[candidate.path]
        if view.has_blobs and artifacts_fit(view.header, target, compiler):
            try:
                store.add(view.served_results(), candidate.name, other_files=graphs.NAME)
                say_left_out(view, sources.said_left_out, sources.on_problem)
            except TunedKernelsError as exc:
                sources.drop(view, exc)  # a file-level fault (two entries for a key): dropped, said once
    return store


def artifacts_fit(header: model.Header, target: model.Target, compiler: model.CompilerFingerprint) -> bool:
    """A bundle's compiled kernels are served only where they were built for exactly this GPU target and
    compiler (configs alone may carry over more widely)."""
    from tuned_kernels.hardware.archs import triton_target_of

    if target.arch == "cpu" or header.target.arch == "cpu":
        return False
    same_compiler = header.compiler.compiler_id == compiler.compiler_id
    return same_compiler and triton_target_of(header.target.arch) == triton_target_of(target.arch)


def _log_selection(selection: Selection, on_problem: Problem) -> None:
    chosen = ", ".join(c.name for c in selection.selected) or "none"
    rejected = "; ".join(f"{r.candidate.name}: {r.reason}" for r in selection.rejected)
    log.info("tuned-kernels: bundles selected: %s%s", chosen, f"; rejected: {rejected}" if rejected else "")
    if selection.rejected and not selection.selected:
        on_problem(f"no bundle fits this GPU and compiler ({rejected}); tuning at run time instead")
    elif selection.rejected:
        on_problem(f"not used here: {rejected}")
