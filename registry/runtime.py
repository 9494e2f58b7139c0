"""The run-time registry: the `Resolver` serving, capture and coverage install. It wires the corridor
together and holds no logic of its own: on first use it loads what it serves from (loading.py), decides
through `decision.decide` (pure), says what a decision tells the user (notices.py), counts (stats.py) and
hands a measured miss to its sink (sinks.py: the overlay when serving, the `-o` file when capturing).
Settings come from whoever builds the registry (`enable()` reads them from the environment); nothing in
here reads the environment.
"""

from __future__ import annotations

import atexit
import dataclasses
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuned_kernels.registry import summary as summaries
from tuned_kernels.registry.graph_files import place_graphs
from tuned_kernels.registry.loading import BundleOpener, Loaded, load
from tuned_kernels.registry.notices import Notices
from tuned_kernels.registry.settings import Settings
from tuned_kernels.registry.stats import Stats
from tuned_kernels.registry.strict import strict_stop

from tuned_kernels import model
from tuned_kernels.decision import Decision, Measured, decide, measured_entry
from tuned_kernels.errors import TunedKernelsWarning, one_line, warn
from tuned_kernels.prediction import Tiling
from tuned_kernels.resolving import Compiled

if TYPE_CHECKING:
    from tuned_kernels.results.discovery import OpenedBundles
    from tuned_kernels.triton_edge import host_modules


class Registry:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.bundles = BundleOpener()
        self.stats = Stats()
        self.problems: list[str] = []
        self.notices = Notices(self._problem)
        self.host_modules: host_modules.BuildReport | None = None  # what the warm-up built
        self.warmup: threading.Thread | None = None
        self._loaded: Loaded | None = None
        self._moved: dict[str, model.KernelIdentity | None] = {}  # kernel name -> where its module was
        self._load_lock = threading.Lock()

    def load(self) -> Loaded:
        """What this registry serves from, loaded on first use; a registry that cannot start (detection
        or discovery failed) decides every key a miss and writes nothing, once said."""
        with self._load_lock:
            if self._loaded is None:
                try:
                    self._loaded = load(self.settings, self.bundles.opened(), self._problem)
                except Exception as exc:
                    self._loaded = Loaded()
                    self._problem(f"not serving: {one_line(f'{type(exc).__name__}: {exc}')}; tuning as usual")
                else:
                    report_at_exit(self, self._loaded)
            return self._loaded

    def opened_bundles(self) -> OpenedBundles:
        return self.bundles.opened()

    # -- the corridor: decide, record, refuse -----------------------------------------------------------

    def decide(
        self,
        identity: model.KernelIdentity,
        key: model.TuningKey,
        fits: Callable[[model.Config], bool],
        counted: bool = True,
        kept: Callable[[], Sequence[model.Config]] | None = None,
        tiling: Tiling | None = None,
    ) -> Decision:
        loaded = self.load()
        decision = Decision("miss")
        if loaded.target is not None:
            stored_as = _stored_as(identity, loaded, self._moved, self._problem)
            if tiling is not None:  # on this GPU's multiprocessors
                tiling = dataclasses.replace(tiling, processors=loaded.target.multiprocessor_count)
            decision = decide(stored_as, key, fits, loaded.sources, self.settings.policy, kept, tiling)
            if decision.new_prediction and counted:  # kept untimed: served at once later, tuned on request
                self._keep(model.Entry(stored_as, key, decision.configs[0], found_by=model.FoundBy.PREDICTED))
        if self.settings.strict and counted:  # a probe (counted=False) tunes nothing
            stop_unless_a_bundle_serves(identity, key, decision, loaded)
        if loaded.target is None:
            return decision
        torch_version = loaded.compiler.torch_version if loaded.compiler else "?"
        self.notices.after(identity, key, decision, loaded.sources, torch_version)
        if counted and decision.served:
            self.stats.count(decision, identity.name, key)
        return decision

    def record(
        self, measured: Measured, compiled: Callable[[model.Config], Compiled] | None = None
    ) -> model.Entry | None:
        final = measured.chosen is not None  # a final choice was counted when its timings were recorded
        if not final:
            m = measured
            self.stats.count(m.decision, m.identity.name, m.key, m.benchmarked, m.seconds)
        entry = measured_entry(measured)
        if entry is not None:
            self._keep(entry, compiled, supersede=final)
        return entry

    def _keep(
        self,
        entry: model.Entry,
        compiled: Callable[[model.Config], Compiled] | None = None,
        supersede: bool = False,
    ) -> None:
        loaded = self.load()
        loaded.sources.add_local((entry,))
        if loaded.sink is not None:
            loaded.sink.keep(entry, compiled, supersede=supersede)

    def refuse(
        self, identity: model.KernelIdentity, key: model.TuningKey, decision: Decision, why: str
    ) -> None:
        self.load().sources.refuse(model.slot_of(identity, key), decision.configs[0])
        self._problem(
            f"{decision.source}: config {one_line(decision.configs[0].describe(), 80)} failed to launch "
            f"{identity.name} ({why}); tuning instead"
        )

    def step_aside(self, kernel: str, why: str) -> None:
        self.stats.step_aside(kernel, why)

    def warn(self, message: str) -> None:
        self._problem(message)

    def _problem(self, message: str) -> None:
        self.problems.append(message)
        warn(message)

    # -- for Inductor's look-up table and for tests -------------------------------------------------------

    def stored(self, identity: model.KernelIdentity) -> list[model.Entry]:
        """The selected bundles' entries for this kernel (this source); none when capturing, which measures
        everything."""
        loaded = self.load()
        if loaded.target is None or self.settings.capture is not None:
            return []
        return loaded.sources.bundle_entries(identity)

    def place_graphs(self, cache_dir: Path) -> None:
        """Puts the bundles' compiled graphs into Inductor's cache directory before Inductor compiles anything
        (and takes out those placed earlier from bundles found here that offer them no more)."""
        place_graphs(
            self.load().graphs, cache_dir, set(self.bundles.opened().views), self.stats, self._problem
        )

    def add_local(self, entries: Sequence[model.Entry]) -> None:
        """Entries to answer from after the bundles' (as if tuned in this process)."""
        self.load().sources.add_local(entries)

    def flush(self) -> None:
        """Waits until what this process tuned is in the overlay (or the capture file)."""
        sink = self.load().sink
        if sink is not None:
            sink.flush()

    def summary(self, quiet: bool = False) -> dict[str, Any]:
        """What this registry found, selected, rejected and did. `quiet`: loading's problems are only listed
        here (for a report that prints them), not also warned about."""
        with warnings.catch_warnings():
            if quiet:
                warnings.simplefilter("ignore", TunedKernelsWarning)
            loaded = self.load()
        self.flush()  # the counts include the overlay writes of what was tuned so far
        changed = self.notices.changed_kernels
        return summaries.summary(loaded, self.stats, changed, self.host_modules, self.problems)


def _stored_as(
    identity: model.KernelIdentity,
    loaded: Loaded,
    moved_to: dict[str, model.KernelIdentity | None],
    problem: Callable[[str], None],
) -> model.KernelIdentity:
    """The identity the bundles hold this kernel under: its own, or, where its module was renamed since it
    was tuned, the old name's (said once per kernel; `moved_to` keeps what was found per kernel name)."""
    if identity.name not in moved_to:
        moved = loaded.sources.moved(identity)
        moved_to[identity.name] = moved
        if moved is not None:
            problem(
                f"serving {identity.name} from the entries of {moved.name}: the same kernel (its source "
                "digest matches) in a module renamed since it was tuned"
            )
    moved = moved_to[identity.name]
    return identity if moved is None else dataclasses.replace(moved, param_names=identity.param_names)


def report_at_exit(registry: Registry, loaded: Loaded) -> None:
    """Coverage (`report` set: this process's hits, predictions and misses and its overlay appended there)
    and the verbose summary, when the process ends."""
    settings = registry.settings
    if settings.report is not None:
        overlay = loaded.sink.path if loaded.sink is not None else None
        atexit.register(summaries.append_coverage, settings.report, registry.stats, overlay)
    if settings.verbose:
        atexit.register(lambda: summaries.print_exit_summary(registry.summary()))


def stop_unless_a_bundle_serves(
    identity: model.KernelIdentity, key: model.TuningKey, decision: Decision, loaded: Loaded
) -> None:
    """TUNED_KERNELS_STRICT: a key not served from a bundle (a miss, or this machine's overlay) stops."""
    shown = one_line(", ".join(str(v) for v in key), 120)
    if not (decision.served and decision.source != loaded.sources.local_name):
        strict_stop(f"{identity.name} ({shown}) is not in the bundles; it would be tuned")
    if decision.kind == "predicted":
        strict_stop(f"{identity.name} ({shown}) is not in the bundles; its config would be predicted")
