"""The run-time registry: a `Resolver` that loads the selected bundles and the overlay on first use and
answers every autotuned kernel and `ImplementationChoice`, deciding through `decision.decide`.

`resolve` is the one measure-and-remember path: a hit returns the kernel's own config; a miss measures the
candidates (without configs known to fail), counts, and hands the winner to the sink: the per-user overlay
when serving, the `-o` file (with the compiled kernel) when capturing. Settings come from whoever builds the
registry (`enable()` reads them from the environment); nothing in here reads the environment.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import logging
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tuned_kernels.registry.compiled_batch import CompiledKernelBatch
from tuned_kernels.registry.exit_summary import exit_summary
from tuned_kernels.registry.forking import in_every_forked_child
from tuned_kernels.registry.settings import Settings
from tuned_kernels.registry.sources import LoadedSources

from tuned_kernels import model
from tuned_kernels.decision import Decision, candidates, decide, measured_entry
from tuned_kernels.errors import TunedKernelsError, TunedKernelsWarning, one_line, warn
from tuned_kernels.inductor_edge import keys as inductor_keys
from tuned_kernels.resolving import Compiled, Resolved
from tuned_kernels.selection import BundleCandidate, Selection, select_bundles
from tuned_kernels.timestamps import utc_now
from tuned_kernels.triton_edge import cache_manager, host_modules
from tuned_kernels.triton_edge.interpreter import interpreting

if TYPE_CHECKING:  # the reader (protobuf, zstandard) is imported when the registry loads, not before
    from tuned_kernels.results.discovery import OpenedBundles
    from tuned_kernels.results.view import ResultsView

log = logging.getLogger("tuned_kernels")
T = TypeVar("T")


@dataclass
class Stats:
    hits: int = 0
    nearest: int = 0
    misses: int = 0
    configs_benchmarked: int = 0
    missed_keys: list[tuple[str, model.TuningKey]] = field(default_factory=list)
    served_from: dict[str, int] = field(default_factory=dict)  # hits (and nearest) per bundle or overlay file
    misses_by_reason: dict[str, int] = field(default_factory=dict)  # decision.MissReason -> misses
    changed_kernels: dict[str, str] = field(
        default_factory=dict
    )  # kernel -> the file tuned for another source
    seconds_tuning: float = 0.0  # spent measuring misses

    @property
    def missed_kernels(self) -> dict[str, int]:
        """How many keys missed, per kernel."""
        counts: dict[str, int] = {}
        for name, _ in self.missed_keys:
            counts[name] = counts.get(name, 0) + 1
        return counts


class Registry:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._lock = threading.RLock()
        self._loaded = False
        self._opened: OpenedBundles | None = None
        self._open_lock = threading.Lock()
        self.host_modules: host_modules.BuildReport | None = None  # what the warm-up built
        self.warmup: threading.Thread | None = None
        in_every_forked_child(self._after_fork)
        self.broken = False  # could not start: decides every key a miss, writes nothing
        self.stats = Stats()
        self.selection = Selection((), (), ())
        self.problems: list[str] = []
        self.sources = LoadedSources(on_problem=self._problem)
        self.store = cache_manager.ArtifactStore()
        self._write_failed = False
        self._unfit_warned: set[tuple[str, str]] = set()
        self.target: model.Target | None = None
        self.compiler: model.CompilerFingerprint | None = None
        self.overlay_path: Path | None = None
        capture = self.settings.capture
        self._compiled_batch = (
            None
            if capture is None
            else CompiledKernelBatch(capture, lambda: self.header(model.Producer.CAPTURE), self._problem)
        )

    # -- loading ----------------------------------------------------------------------------------------

    def load(self) -> None:
        with self._lock:
            if not self._loaded:
                try:
                    self._load()
                except Exception as exc:  # detection or discovery failed: every launch tunes, once said
                    self.broken = True
                    self._problem(f"not serving: {one_line(f'{type(exc).__name__}: {exc}')}; tuning as usual")
                self._loaded = True

    def _load(self) -> None:
        from tuned_kernels.hardware import compiler_fingerprint, detect

        from tuned_kernels.results import overlay

        self.target = target = detect()
        self.compiler = compiler = compiler_fingerprint(target)
        opened = self.opened_bundles()
        for message in opened.problems:
            self._problem(message)
        views = opened.views
        found_bundles = [BundleCandidate(source, path, views[path].header) for source, path in opened.found]
        self.selection = select_bundles(target, compiler, found_bundles)
        self.overlay_path = shared = overlay.overlay_path(target, compiler)
        self.sources = LoadedSources(
            [views[c.path] for c in self.selection.selected],
            [views[c.path] for c in self.selection.stale],
            str(shared),
            self._problem,
        )
        self._load_compiled_kernels(views, target, compiler)
        self.overlay_path = self._open_overlay(shared)
        self.sources.local_name = str(self.overlay_path)
        self._log_selection()
        if self.settings.report is not None:
            atexit.register(self._write_report, self.settings.report)
        if self.settings.verbose:
            atexit.register(self._print_summary)

    def _after_fork(self) -> None:
        """In a forked child the warm-up thread is gone, and may have held the lock of the bundles it was
        opening: the child opens them itself."""
        self._open_lock = threading.Lock()
        self.warmup = None

    def opened_bundles(self) -> OpenedBundles:
        """The installed bundles, discovered and opened once per registry (by whichever thread asks first:
        the warm-up opens them in the background, before the first kernel needs them); no GPU is touched."""
        from tuned_kernels.results.discovery import open_installed

        with self._open_lock:
            if self._opened is None:
                self._opened = open_installed()
            return self._opened

    def _load_compiled_kernels(
        self, views: Mapping[str, ResultsView], target: model.Target, compiler: model.CompilerFingerprint
    ) -> None:
        self.store.on_problem = self._problem
        for candidate in self.selection.selected:
            view = views[candidate.path]
            if view.has_blobs and artifacts_fit(view.header, target, compiler):
                try:
                    self.store.add(view.results(), candidate.name)
                except TunedKernelsError as exc:  # one bad entry: this bundle's compiled kernels go unused
                    self._problem(f"not using the compiled kernels of {candidate.name}: {exc}")
        recorder = self.record_compiled if self.settings.capture is not None and not interpreting() else None
        if len(self.store) or recorder is not None:
            cache_manager.install(self.store, recorder)

    def _open_overlay(self, shared: Path) -> Path:
        """The overlay this process reads and writes: the shared file, or this user's own beside it when
        the shared one must be left alone (unreadable, from a newer schema, another user's)."""
        from tuned_kernels.results import overlay

        for path in (shared, overlay.private_path(shared)):
            try:
                held = overlay.read_overlay(path)
            except TunedKernelsError as exc:
                self._problem(f"leaving the overlay cache as it is: {exc}")
                continue
            if held is not None:
                self.sources.add_local(held.entries)
            return path
        self._write_failed = True  # neither is usable: what is tuned stays in this process
        return shared

    def add_local(self, entries: Sequence[model.Entry]) -> None:
        """Entries to answer from after the bundles' (as if tuned in this process)."""
        self.load()
        self.sources.add_local(entries)

    def _write_report(self, path: Path) -> None:
        """Appends this process's hits and misses to `path` (one JSON line; `tuned-kernels coverage`)."""
        from filelock import FileLock

        line = {
            "hits": self.stats.hits + self.stats.nearest,
            "misses": self.stats.misses,
            "missed": [[name, list(key)] for name, key in self.stats.missed_keys],
        }
        with contextlib.suppress(OSError), FileLock(str(path) + ".lock", timeout=30), path.open("a") as f:
            f.write(json.dumps(line) + "\n")

    def _print_summary(self) -> None:
        with contextlib.suppress(Exception):  # at exit, stderr may be closed: nothing more to say
            print("\n".join(exit_summary(self.summary())), file=sys.stderr, flush=True)

    def _log_selection(self) -> None:
        chosen = ", ".join(c.name for c in self.selection.selected) or "none"
        rejected = "; ".join(f"{r.candidate.name}: {r.reason}" for r in self.selection.rejected)
        log.info(
            "tuned-kernels: bundles selected: %s%s", chosen, f"; rejected: {rejected}" if rejected else ""
        )
        if self.selection.rejected and not self.selection.selected:
            self._problem(f"no bundle fits this GPU and compiler ({rejected}); tuning at run time instead")

    def _problem(self, message: str) -> None:
        self.problems.append(message)
        warn(message)

    def warn(self, message: str) -> None:
        self._problem(message)

    # -- deciding, measuring, remembering -------------------------------------------------------------------

    def decide(
        self, identity: model.KernelIdentity, key: model.TuningKey, fits: Callable[[model.Config], bool]
    ) -> Decision:
        self.load()
        if self.broken:
            return Decision("miss")
        decision = decide(identity, key, fits, self.sources, self.settings.policy)
        inductor = identity.name.startswith(inductor_keys.PREFIX)  # its "source" is torch's version
        if decision.kind == "miss" and inductor:
            self._warn_other_torch(identity)
        changed = decision.reason == "kernel changed" and not inductor
        if changed and identity.name not in self.stats.changed_kernels:
            self.stats.changed_kernels[identity.name] = decision.changed_in
            self._problem(
                f"{decision.changed_in}: holds {identity.name} for another source: the kernel changed since "
                "it was tuned; tuning it again"
            )
        for entry, source in decision.unfit:
            if (identity.name, source) not in self._unfit_warned:  # one warning per kernel and file
                self._unfit_warned.add((identity.name, source))
                self._problem(
                    f"{source}: config {one_line(entry.best.describe(), 80)} is not one of the configs of "
                    f"{identity.name}; tuning instead"
                )
        return decision

    def serve(
        self, identity: model.KernelIdentity, key: model.TuningKey, fits: Callable[[model.Config], bool]
    ) -> Decision:
        decision = self.decide(identity, key, fits)
        if decision.served:
            self.count(decision, identity, 0, key)
        return decision

    def stored(self, identity: model.KernelIdentity) -> list[model.Entry]:
        """The selected bundles' entries for this kernel (this source); none when capturing, which measures
        everything."""
        self.load()
        if self.broken or self.settings.capture is not None:
            return []
        return self.sources.bundle_entries(identity)

    def _warn_other_torch(self, identity: model.KernelIdentity) -> None:
        """Inductor's choices carry over only within one torch version: say so once per bundle."""
        running = self.compiler.torch_version if self.compiler else "?"
        for view in self.sources.made_elsewhere(identity):
            if ("torch", view.path) not in self._unfit_warned:
                self._unfit_warned.add(("torch", view.path))
                self._problem(
                    f"{view.path}: Inductor choices made with torch {view.header.compiler.torch_version}, "
                    f"running {running}; Inductor autotunes as usual"
                )

    def resolve(
        self,
        identity: model.KernelIdentity,
        key: model.TuningKey,
        own: Mapping[model.Config, T],
        measure: Callable[[Sequence[T]], Mapping[T, float]],
        tune_space: Callable[[], Mapping[model.Config, T]] | None = None,
        compiled: Callable[[model.Config], Compiled] | None = None,
    ) -> Resolved[T]:
        decision = self.serve(identity, key, own.__contains__)
        if decision.served:
            return Resolved(own[decision.configs[0]], decision)
        space = tune_space() if tune_space is not None else own
        tried = candidates(list(space), decision)
        if len(tried) == 1:
            self.count(decision, identity, 0, key)
            return Resolved(space[tried[0]], decision)
        by_value = {space[c]: c for c in tried}
        started = time.perf_counter()
        timings = {by_value[t]: ms for t, ms in measure([space[c] for c in tried]).items()}
        with self._lock:
            self.stats.seconds_tuning += time.perf_counter() - started
        entry = self.record(identity, key, timings, decision, compiled)
        if entry is None:  # nothing ran: Triton's choice among failures, nothing to remember
            return Resolved(space[min(timings, key=lambda c: timings[c])], decision)
        return Resolved(space[entry.best], decision)

    def record(
        self,
        identity: model.KernelIdentity,
        key: model.TuningKey,
        timings: Mapping[model.Config, float],
        decision: Decision,
        compiled: Callable[[model.Config], Compiled] | None = None,
        chosen: model.Config | None = None,
    ) -> model.Entry | None:
        if chosen is None:  # a final choice was counted when its timings were recorded
            self.count(decision, identity, len(timings), key)
        entry = measured_entry(identity, key, timings, decision, chosen=chosen)
        if entry is not None:
            self.remember(entry, compiled, supersede=chosen is not None)
        return entry

    def refuse(
        self, identity: model.KernelIdentity, key: model.TuningKey, decision: Decision, why: str
    ) -> None:
        with self._lock:
            self.sources.refuse(model.slot_of(identity, key), decision.configs[0])
        self._problem(
            f"{decision.source}: config {one_line(decision.configs[0].describe(), 80)} failed to launch "
            f"{identity.name} ({why}); tuning instead"
        )

    def count(
        self, decision: Decision, identity: model.KernelIdentity, benchmarked: int, key: model.TuningKey
    ) -> None:
        with self._lock:
            if decision.served:
                self.stats.served_from[decision.source] = self.stats.served_from.get(decision.source, 0) + 1
            if decision.kind == "hit":
                self.stats.hits += 1
            elif decision.kind == "nearest":
                self.stats.nearest += 1
            else:
                self.stats.misses += 1
                self.stats.missed_keys.append((identity.name, key))
                reason = decision.reason or "not in any bundle"
                self.stats.misses_by_reason[reason] = self.stats.misses_by_reason.get(reason, 0) + 1
            self.stats.configs_benchmarked += benchmarked

    def remember(
        self,
        entry: model.Entry,
        compiled: Callable[[model.Config], Compiled] | None = None,
        supersede: bool = False,
    ) -> None:
        """A config tuned on a miss: served from now on, and written to the sink: the overlay (serving) or
        the capture file, with the winner's compiled kernel where one is given (`supersede`: replacing
        what the sink holds for the slot, even if faster)."""
        self.sources.add_local((entry,))
        if self.broken:
            return
        capture = self.settings.capture
        blobs: dict[str, bytes] = {}
        if capture is not None:
            artifacts, blobs = self._compiled(entry.best, compiled)
            entry = dataclasses.replace(entry, found_by=model.FoundBy.CAPTURED, artifacts=artifacts)
        elif self._write_failed:
            return
        path = capture or self.overlay_path
        assert path is not None
        from tuned_kernels.results import overlay

        try:
            limit = None if capture else overlay.MAX_ENTRIES
            overlay.add_to_overlay(
                path, self.header(model.Producer.CAPTURE), [entry], blobs, limit, supersede=supersede
            )
        except Exception as exc:  # read-only or full disk, lock time-out: keep running, say so once
            if not self._write_failed:
                self._write_failed = True
                self._problem(
                    f"cannot write {path}: {one_line(str(exc))}; tuned configs stay in this process"
                )

    def record_compiled(self, artifact: model.Artifact, blobs: dict[str, bytes], name: str) -> None:
        """The cache manager's recorder when capturing: a kernel compiled outside tuning (compiled_batch.py),
        but not one Inductor compiles only to time it (hundreds, never compiled again when served)."""
        if self._compiled_batch is not None and not inductor_keys.compiled_only_to_time(name):
            self._compiled_batch.add(artifact, blobs, name)

    def flush_compiled(self) -> None:
        if self._compiled_batch is not None:
            self._compiled_batch.flush()

    def _compiled(
        self, config: model.Config, compiled: Callable[[model.Config], Compiled] | None
    ) -> Compiled:
        """When capturing on a GPU, the winner's compiled kernel (compiled while benchmarking) goes along."""
        if compiled is None:
            return (), {}
        try:
            return compiled(config)
        except Exception as exc:
            self._problem(
                f"could not keep the compiled kernel of {config.describe()}: {type(exc).__name__}: {exc}"
            )
            return (), {}

    def header(self, producer: model.Producer) -> model.Header:
        self.load()
        assert self.target is not None and self.compiler is not None
        return model.Header(self.target, self.compiler, producer, _tool_version(), utc_now())

    def summary(self, quiet: bool = False) -> dict[str, Any]:
        """What this registry found, selected, rejected and did. `quiet`: loading's problems are only listed
        here (for a report that prints them), not also warned about."""
        if quiet:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TunedKernelsWarning)
                self.load()
        else:
            self.load()
        path = self.overlay_path
        size = path.stat().st_size if path is not None and path.is_file() else 0
        return {
            "target": self.target.arch if self.target else None,
            "compiler": self.compiler.describe() if self.compiler else None,
            "bundles_found": len(self.selection.selected) + len(self.selection.rejected),
            "selected": [{"bundle": c.name, "file": c.path} for c in self.selection.selected],
            "rejected": [
                {"bundle": r.candidate.name, "file": r.candidate.path, "reason": r.reason}
                for r in self.selection.rejected
            ],
            "entries": len(self.sources),
            "bundle_entries": {view.path: len(view) for view in self.sources.bundles},
            "overlay": {"path": str(path), "bytes": size, "entries_per_kernel": self.sources.local_counts()},
            "served_from": dict(self.stats.served_from),
            "hits": self.stats.hits,
            "nearest": self.stats.nearest,
            "misses": self.stats.misses,
            "configs_benchmarked": self.stats.configs_benchmarked,
            "compiled_kernels": {
                "held": len(self.store),
                "served": self.store.served,
                "failed": self.store.failed,
                "compiled_here": self.store.compiled_here if len(self.store) else None,
            },
            "host_modules_built_ahead": dataclasses.asdict(self.host_modules) if self.host_modules else None,
            "missed_kernels": dict(self.stats.missed_kernels),
            "misses_by_reason": dict(self.stats.misses_by_reason),
            "changed_kernels": dict(self.stats.changed_kernels),
            "seconds_tuning": round(self.stats.seconds_tuning, 3),
            "problems": list(self.problems),
        }


def artifacts_fit(header: model.Header, target: model.Target, compiler: model.CompilerFingerprint) -> bool:
    """A bundle's compiled kernels are served only where they were built for exactly this GPU target and
    compiler (configs alone may carry over more widely)."""
    from tuned_kernels.hardware.archs import triton_target_of

    if target.arch == "cpu" or header.target.arch == "cpu":
        return False
    same_compiler = header.compiler.compiler_id == compiler.compiler_id
    return same_compiler and triton_target_of(header.target.arch) == triton_target_of(target.arch)


def _tool_version() -> str:
    from tuned_kernels.version import TOOL_VERSION

    return TOOL_VERSION
