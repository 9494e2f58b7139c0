"""What serving did in this process: keys served (per file that answered), misses and why, configs
benchmarked and the seconds it took. Counted from decisions and measured misses, never from files; what
Inductor compiled into its cache directory is found there when asked (`watched_inductor_cache`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from tuned_kernels import model
from tuned_kernels.decision import Decision


@dataclass
class Stats:
    hits: int = 0
    nearest: int = 0
    predicted: int = 0
    misses: int = 0
    configs_benchmarked: int = 0
    missed_keys: list[tuple[str, model.TuningKey]] = field(default_factory=list)
    predicted_keys: list[tuple[str, model.TuningKey]] = field(default_factory=list)  # not in any bundle
    served_from: dict[str, int] = field(default_factory=dict)  # hits (and nearest) per bundle or overlay file
    misses_by_reason: dict[str, int] = field(default_factory=dict)  # decision.MissReason -> misses
    seconds_tuning: float = 0.0  # spent measuring misses
    stepped_aside: dict[str, str] = field(default_factory=dict)  # kernel -> why it was not asked about
    graph_files_placed: int = 0  # compiled torch.compile graph files put into Inductor's cache directory
    graph_files_present: int = 0  # ... found there already (left as they were)
    graph_files_refused: int = 0  # ... not placed: they failed their checks
    graph_files_removed: int = 0  # placed by an earlier run, taken out: no bundle offers them now
    # Inductor's cache directory, the time.time() serving began there, and the files the bundles offered it
    watched_inductor_cache: tuple[str, float, frozenset[str]] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(
        self, decision: Decision, name: str, key: model.TuningKey, benchmarked: int = 0, seconds: float = 0.0
    ) -> None:
        """One key decided: served, or missed and measured (`benchmarked` configs in `seconds`)."""
        with self._lock:
            if decision.served:
                self.served_from[decision.source] = self.served_from.get(decision.source, 0) + 1
            if decision.kind == "hit":
                self.hits += 1
            elif decision.kind == "nearest":
                self.nearest += 1
            elif decision.kind == "predicted":
                self.predicted += 1
                self.predicted_keys.append((name, key))
            else:
                self.misses += 1
                self.missed_keys.append((name, key))
                reason = decision.reason or "not in any bundle"
                self.misses_by_reason[reason] = self.misses_by_reason.get(reason, 0) + 1
            self.configs_benchmarked += benchmarked
            self.seconds_tuning += seconds

    def step_aside(self, kernel: str, why: str) -> None:
        with self._lock:
            self.stepped_aside[kernel] = why

    @property
    def missed_kernels(self) -> dict[str, int]:
        """How many keys missed, per kernel."""
        return _per_kernel(self.missed_keys)

    @property
    def predicted_kernels(self) -> dict[str, int]:
        """How many keys were served a predicted config, per kernel."""
        return _per_kernel(self.predicted_keys)


def _per_kernel(keys: list[tuple[str, model.TuningKey]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, _ in keys:
        counts[name] = counts.get(name, 0) + 1
    return counts
