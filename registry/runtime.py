"""The run-time registry: loads the selected bundles and the overlay on first use, answers look-ups, and
remembers what was tuned on misses. One place decides hit or miss: `Registry.decide`."""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import logging
import os
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuned_kernels import model
from tuned_kernels.errors import TunedKernelsError, one_line
from tuned_kernels.nearest import nearest_key
from tuned_kernels.results import overlay
from tuned_kernels.results.discovery import discover
from tuned_kernels.results.view import ResultsView
from tuned_kernels.selection import BundleCandidate, Selection, select_bundles
from tuned_kernels.timestamps import utc_now
from tuned_kernels.triton_edge import cache_manager

log = logging.getLogger("tuned_kernels")
ON_MISS_ENV = "TUNED_KERNELS_ON_MISS"  # tune (default) | nearest
STALE_ENV = "TUNED_KERNELS_STALE"  # reject (default) | seed
CAPTURE_ENV = "TUNED_KERNELS_CAPTURE"  # a results file to write every decision into
REPORT_ENV = "TUNED_KERNELS_REPORT"  # a file each process appends its hits and misses to, at exit


class TunedKernelsWarning(UserWarning):
    pass


def warn(message: str) -> None:
    warnings.warn(f"tuned-kernels: {message}", TunedKernelsWarning, stacklevel=3)


@dataclass(frozen=True)
class Decision:
    kind: str  # "hit", "nearest", "seed", "miss"
    configs: tuple[model.Config, ...] = ()  # hit/nearest: the one config; seed: the configs to try first
    source: str = ""  # the bundle (or overlay) file that answered
    excluded: frozenset[model.Config] = frozenset()  # seed/miss: configs known to fail, never tried


@dataclass
class Stats:
    hits: int = 0
    nearest: int = 0
    misses: int = 0
    configs_benchmarked: int = 0
    missed_keys: list[tuple[str, model.TuningKey]] = field(default_factory=list)

    @property
    def missed_kernels(self) -> dict[str, int]:
        """How many keys missed, per kernel."""
        counts: dict[str, int] = {}
        for name, _ in self.missed_keys:
            counts[name] = counts.get(name, 0) + 1
        return counts


Table = dict[tuple[str, str], dict[model.TuningKey, model.Entry]]


class Registry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded = False
        self.stats = Stats()
        self.selection = Selection((), (), ())
        self.problems: list[str] = []
        self.bundles: list[ResultsView] = []  # the selected bundles, best first; entries decoded on demand
        self.stale_bundles: list[ResultsView] = []  # with TUNED_KERNELS_STALE=seed
        self.local: Table = {}  # the overlay's entries and those tuned in this process
        self.refused: dict[model.EntrySlot, model.Config] = {}  # served configs that failed to launch
        self._unfit_warned: set[tuple[str, str]] = set()
        self._write_failed = False
        self.broken = False  # could not start: decides every key a miss, writes nothing
        self.target: model.Target | None = None
        self.compiler: model.CompilerFingerprint | None = None
        self.overlay_path: Path | None = None

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

        from tuned_kernels.results import open_results

        self.target = target = detect()
        self.compiler = compiler = compiler_fingerprint(target)
        views: dict[str, ResultsView] = {}
        candidates = []
        for found in discover():
            try:
                view = views[str(found.path)] = open_results(found.path)
            except TunedKernelsError as exc:
                named = "" if found.source == str(found.path) else f" of {found.source}"
                self._problem(f"skipping bundle{named}: {exc}")
                continue
            candidates.append(BundleCandidate(found.source, str(found.path), view.header))
        self.selection = select_bundles(target, compiler, candidates)
        self.bundles = [views[c.path] for c in self.selection.selected]  # best first
        cache_manager.STORE.on_problem = self._problem
        for candidate in self.selection.selected:
            view = views[candidate.path]
            if view.has_blobs and artifacts_fit(view.header, target, compiler):
                try:
                    cache_manager.STORE.add(view.results(), candidate.name)
                except TunedKernelsError as exc:  # one bad entry: this bundle's compiled kernels go unused
                    self._problem(f"not using the compiled kernels of {candidate.name}: {exc}")
        if len(cache_manager.STORE):
            cache_manager.install()
        if os.environ.get(STALE_ENV, "reject") == "seed":
            self.stale_bundles = [views[c.path] for c in self.selection.stale]
        self.overlay_path = self._open_overlay(overlay.overlay_path(target, compiler))
        self._log_selection()
        report = os.environ.get(REPORT_ENV)
        if report:
            atexit.register(self._write_report, Path(report))

    def _open_overlay(self, shared: Path) -> Path:
        """The overlay this process reads and writes: the shared file, or this user's own beside it when
        the shared one must be left alone (unreadable, from a newer schema, another user's)."""
        for path in (shared, overlay.private_path(shared)):
            try:
                held = overlay.read_overlay(path)
            except TunedKernelsError as exc:
                self._problem(f"leaving the overlay cache as it is: {exc}")
                continue
            if held is not None:
                self.add_local(held.entries)
            return path
        self._write_failed = True  # neither is usable: what is tuned stays in this process
        return shared

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

    def add_local(self, entries: tuple[model.Entry, ...]) -> None:
        """Entries answered after the bundles' (the overlay's, and those tuned in this process)."""
        for entry in entries:
            self.local.setdefault((entry.kernel.name, entry.kernel.source_hash), {})[entry.key] = entry

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

    # -- decisions ------------------------------------------------------------------------------------------

    def decide(
        self, identity: model.KernelIdentity, key: model.TuningKey, fits: Callable[[model.Config], bool]
    ) -> Decision:
        """Hit, nearest, seed or miss for this launch; `fits` says whether a stored config is one the kernel
        itself offers (a config from a file is input from outside the program: anything else is a miss)."""
        self.load()
        if self.broken:
            return Decision("miss")
        if os.environ.get(CAPTURE_ENV):
            return Decision("miss")  # capturing: every decision is made (and recorded) afresh
        slot = (identity.name, identity.source_hash, key)
        found = self._lookup(slot) if slot not in self.refused else None
        if found is not None:
            entry, source = found
            if fits(entry.best):
                return Decision("hit", (entry.best,), source)
            self._unfit(identity, entry.best, source)
        if os.environ.get(ON_MISS_ENV, "tune") == "nearest":
            keys = {k: found for k, found in self._keys_of(identity).items() if fits(found[0].best)}
            near = nearest_key(key, keys)
            if near is not None:
                return Decision("nearest", (keys[near][0].best,), keys[near][1])
        excluded = self._known_bad(identity)
        if self.stale_bundles:
            stale = {
                e.key: e
                for view in reversed(self.stale_bundles)
                for e in self._entries_named(view, identity.name)
            }
            near = nearest_key(key, stale)
            if near is not None:
                old = stale[near]
                seeds = (old.best, *(t.config for t in old.timings[:3]))
                return Decision("seed", seeds, "stale bundle", excluded)
        return Decision("miss", excluded=excluded)

    def _unfit(self, identity: model.KernelIdentity, config: model.Config, source: str) -> None:
        if (identity.name, source) not in self._unfit_warned:  # one warning per kernel and file
            self._unfit_warned.add((identity.name, source))
            self._problem(
                f"{source}: config {one_line(config.describe(), 80)} is not one of the configs of "
                f"{identity.name}; tuning instead"
            )

    def refuse(self, slot: model.EntrySlot, config: model.Config) -> None:
        """A served config failed to launch: from now on this slot is a miss that never tries it."""
        with self._lock:
            self.refused[slot] = config
            self.local.get(slot[:2], {}).pop(slot[2], None)

    def _lookup(self, slot: model.EntrySlot) -> tuple[model.Entry, str] | None:
        for view in self.bundles:
            try:
                entry = view.lookup(slot)
            except TunedKernelsError as exc:  # a corrupt entry: this bundle answers no more
                self._drop(view, exc)
                continue
            if entry is not None:
                return entry, view.path
        entry = self.local.get(slot[:2], {}).get(slot[2])
        return (entry, str(self.overlay_path)) if entry is not None else None

    def _drop(self, view: ResultsView, exc: TunedKernelsError) -> None:
        self.bundles = [b for b in self.bundles if b is not view]
        self.stale_bundles = [b for b in self.stale_bundles if b is not view]
        self._problem(f"dropping bundle: {exc}")

    def _entries_named(self, view: ResultsView, name: str) -> list[model.Entry]:
        try:
            return view.entries_named(name)
        except TunedKernelsError as exc:
            self._drop(view, exc)
            return []

    def _keys_of(self, identity: model.KernelIdentity) -> dict[model.TuningKey, tuple[model.Entry, str]]:
        """Every key known for this kernel (same source), bundles winning over the overlay."""
        local = self.local.get((identity.name, identity.source_hash), {})
        keys = {k: (e, str(self.overlay_path)) for k, e in local.items()}
        for view in reversed(self.bundles):
            for e in self._entries_named(view, identity.name):
                if e.kernel.source_hash == identity.source_hash:
                    keys[e.key] = (e, view.path)
        return keys

    def _known_bad(self, identity: model.KernelIdentity) -> frozenset[model.Config]:
        """Configs of this kernel that a bundle recorded as rejected (wrong numbers, failed compiles) or
        that failed to launch here: a miss never tries them."""
        kernel = (identity.name, identity.source_hash)
        bad = {config for slot, config in self.refused.items() if slot[:2] == kernel}
        for view in (*self.bundles, *self.stale_bundles):
            for e in self._entries_named(view, identity.name):
                if e.kernel.source_hash == identity.source_hash:
                    bad.update(r.config for r in e.rejected)
        return frozenset(bad)

    def count(
        self, decision: Decision, identity: model.KernelIdentity, benchmarked: int, key: model.TuningKey
    ) -> None:
        with self._lock:
            if decision.kind == "hit":
                self.stats.hits += 1
            elif decision.kind == "nearest":
                self.stats.nearest += 1
            else:
                self.stats.misses += 1
                self.stats.missed_keys.append((identity.name, key))
            self.stats.configs_benchmarked += benchmarked

    def remember(self, entry: model.Entry, blobs: dict[str, bytes] | None = None) -> None:
        """A config tuned on a miss: served from now on, written to the overlay for the next process."""
        self.add_local((entry,))
        if self.broken:
            return
        assert self.overlay_path is not None
        capture = os.environ.get(CAPTURE_ENV)
        if capture:
            entry = dataclasses.replace(entry, found_by=model.FoundBy.CAPTURED)
        path = Path(capture) if capture else self.overlay_path
        if self._write_failed and not capture:
            return
        try:
            limit = None if capture else overlay.MAX_ENTRIES
            overlay.add_to_overlay(path, self.header(model.Producer.CAPTURE), [entry], blobs, limit)
        except Exception as exc:  # read-only or full disk, lock time-out: keep running, say so once
            if not self._write_failed:
                self._write_failed = True
                self._problem(f"cannot write {path}: {exc}; tuned configs stay in this process only")

    def header(self, producer: model.Producer) -> model.Header:
        self.load()
        assert self.target is not None and self.compiler is not None
        return model.Header(self.target, self.compiler, producer, _tool_version(), utc_now())

    def summary(self) -> dict[str, Any]:
        self.load()
        size = self.overlay_path.stat().st_size if self.overlay_path and self.overlay_path.exists() else 0
        return {
            "target": self.target.arch if self.target else None,
            "compiler": self.compiler.describe() if self.compiler else None,
            "bundles_found": len(self.selection.selected) + len(self.selection.rejected),
            "selected": [{"bundle": c.name, "file": c.path} for c in self.selection.selected],
            "rejected": [
                {"bundle": r.candidate.name, "file": r.candidate.path, "reason": r.reason}
                for r in self.selection.rejected
            ],
            "entries": sum(len(v) for v in self.bundles) + sum(len(v) for v in self.local.values()),
            "overlay": {"path": str(self.overlay_path), "bytes": size},
            "hits": self.stats.hits,
            "nearest": self.stats.nearest,
            "misses": self.stats.misses,
            "configs_benchmarked": self.stats.configs_benchmarked,
            "compiled_kernels": {
                "held": len(cache_manager.STORE),
                "served": cache_manager.STORE.served,
                "failed": cache_manager.STORE.failed,
            },
            "missed_kernels": dict(self.stats.missed_kernels),
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


REGISTRY = Registry()
