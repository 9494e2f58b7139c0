"""The one place that decides, for a kernel launch, between a stored config and tuning. Pure.

`decide(identity, key, fits, sources, policy, kept, tiling)` returns a `Decision`: a hit (the stored config for
this exact slot), predicted (a config chosen from what the bundles timed at the nearest tuned keys, among
those the kernel's own pruning `kept` for this key: the default on a miss where a bundle holds the kernel;
keys this machine tuned do not count), nearest (the config of the nearest tuned key, when the policy asks
for it), seed (a stale bundle's configs to start a short re-tune from) or miss, with the configs a miss
must never try. A prediction is kept in the overlay, untimed, so later runs serve it at once and a run
with `on_miss="tune"` tunes it. A stored config counts only where `fits` says it is one the kernel itself
offers; the others come back as `unfit`, for the caller to report. Serving, capture and coverage differ
only in their `Policy`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from tuned_kernels import model
from tuned_kernels.nearest import nearest_key
from tuned_kernels.prediction import Tiling, predict
from tuned_kernels.search import neighbours

Found = tuple[model.Entry, str]  # an entry and the file it came from
COMPILED_PREFIX = "compiled:"  # kernels kept by capture for their compiled code alone
KEPT_TIMINGS = 1024  # per entry, fastest first: what a prediction for another key weighs

# Why a key was not served: no selected bundle or overlay names the kernel; they name it, but only for
# another source (it changed since it was tuned); they hold it, but not this key; capture measures anyway.
MissReason = Literal["not in any bundle", "kernel changed", "other key", "configs changed", "capturing"]


@dataclass(frozen=True)
class Decision:
    kind: Literal["hit", "predicted", "nearest", "seed", "miss"]
    configs: tuple[model.Config, ...] = ()  # hit/predicted/nearest: the one config; seed: those to try first
    source: str = ""  # the bundle (or overlay) file that answered
    excluded: frozenset[model.Config] = frozenset()  # seed/miss: configs known to fail, never tried
    unfit: tuple[Found, ...] = field(default=(), compare=False)  # stored configs the kernel does not offer
    reason: MissReason | None = field(default=None, compare=False)  # seed/miss: why the key was not served
    changed_in: str = field(default="", compare=False)  # "kernel changed": a file with its other source
    new_prediction: bool = field(default=False, compare=False)  # predicted now, not read back: to be kept

    @property
    def served(self) -> bool:
        return self.kind in ("hit", "predicted", "nearest")


@dataclass(frozen=True)
class Measured:
    """A miss the edge measured: each candidate's time in ms (inf: it could not run; empty: one candidate,
    nothing timed; only the contenders of a first brief pass: `screened` more were timed), the seconds it
    took, and `chosen` where the caller chose on more than these times
    (Inductor fusing an epilogue into a template: the same timings are recorded once without, then with
    the final choice, which replaces the first)."""

    identity: model.KernelIdentity
    key: model.TuningKey
    decision: Decision
    timings: Mapping[model.Config, float]
    seconds: float = 0.0
    chosen: model.Config | None = None
    screened: int = 0  # candidates timed only briefly, then left out as losers (not in `timings`)
    resident: Mapping[model.Config, int] = field(default_factory=dict)  # programs a multiprocessor held

    @property
    def benchmarked(self) -> int:
        return len(self.timings) + self.screened


@dataclass(frozen=True)
class Policy:
    """How decisions are made: `measure_always` (capture) makes every decision a miss."""

    on_miss: Literal["predict", "tune", "nearest"] = "predict"
    stale: Literal["reject", "seed"] = "reject"
    measure_always: bool = False


class Sources(Protocol):
    """What a decision reads: the selected bundles and the overlay (implemented by the registry)."""

    def lookup(self, slot: model.EntrySlot) -> Iterator[Found]:
        """The entries stored for `slot`, the one to serve first (bundles in order, then the overlay)."""
        ...

    def keys_of(self, identity: model.KernelIdentity) -> Mapping[model.TuningKey, Found]: ...

    def stale_entries(self, identity: model.KernelIdentity) -> Sequence[model.Entry]: ...

    def known_bad(self, identity: model.KernelIdentity) -> frozenset[model.Config]: ...

    def source_hashes(self, names: Sequence[str]) -> Mapping[str, frozenset[str]]:
        """Per file, the source hashes it holds entries of under any of these kernel names (the overlay's
        under `local_name`)."""
        ...

    @property
    def local_name(self) -> str: ...


def decide(
    identity: model.KernelIdentity,
    key: model.TuningKey,
    fits: Callable[[model.Config], bool],
    sources: Sources,
    policy: Policy,
    kept: Callable[[], Sequence[model.Config]] | None = None,
    tiling: Tiling | None = None,
) -> Decision:
    if policy.measure_always:
        return Decision("miss", reason="capturing")
    unfit: list[Found] = []
    for found in lookup(sources, identity, key):
        predicted = found[0].found_by is model.FoundBy.PREDICTED
        if predicted and policy.on_miss != "predict":
            continue  # a prediction kept earlier: tuned now
        if fits(found[0].best):
            return Decision("predicted" if predicted else "hit", (found[0].best,), found[1])
        unfit.append(found)
    excluded = sources.known_bad(identity)
    if policy.on_miss == "predict" and kept is not None:
        allowed = [c for c in kept() if fits(c) and c not in excluded]
        bundles = {k: f for k, f in timed_keys(sources, identity).items() if f[1] != sources.local_name}
        guess = predict(key, bundles, allowed, tiling)
        if guess is not None:
            return Decision(
                "predicted", (guess.config,), guess.source, unfit=tuple(unfit), new_prediction=True
            )
    if policy.on_miss == "nearest":
        keys = {k: f for k, f in timed_keys(sources, identity).items() if fits(f[0].best)}
        near = nearest_key(key, keys)
        if near is not None:
            return Decision("nearest", (keys[near][0].best,), keys[near][1], unfit=tuple(unfit))
    reason: MissReason
    reason, changed_in = miss_reason(identity, sources)
    if unfit:  # the stored config is no longer among the kernel's: its configs changed
        reason, changed_in = "configs changed", ""
    if policy.stale == "seed":
        stale = {e.key: e for e in sources.stale_entries(identity)}
        near = nearest_key(key, stale)
        if near is not None:
            old = stale[near]
            seeds = (old.best, *(t.config for t in old.timings[:3]))
            return Decision("seed", seeds, "stale bundle", excluded, tuple(unfit), reason, changed_in)
    return Decision("miss", (), "", excluded, tuple(unfit), reason, changed_in)


def timed_keys(sources: Sources, identity: model.KernelIdentity) -> dict[model.TuningKey, Found]:
    """The keys this kernel was tuned at (predictions kept in the overlay left out)."""
    return {
        k: f for k, f in sources.keys_of(identity).items() if f[0].found_by is not model.FoundBy.PREDICTED
    }


def lookup(sources: Sources, identity: model.KernelIdentity, key: model.TuningKey) -> Iterator[Found]:
    """The stored entries for this launch, the first to serve first: under the kernel's identity, then
    under its previous one."""
    for each in identity.all():
        yield from sources.lookup(model.slot_of(each, key))


def miss_reason(identity: model.KernelIdentity, sources: Sources) -> tuple[MissReason, str]:
    """Why no stored entry fits, and the bundle that holds the kernel for another source ("kernel changed"),
    by what the bundles hold: the overlay does not change a miss's reason (a kernel the bundles hold only
    under another source stays "changed" for each of its keys once this process has tuned some)."""
    ours = {each.source_hash for each in identity.all()}
    held = sources.source_hashes(tuple(dict.fromkeys(each.name for each in identity.all())))
    bundles = {path: hashes for path, hashes in held.items() if path != sources.local_name}
    if any(hashes & ours for hashes in bundles.values()):
        return "other key", ""
    other = next((path for path, hashes in bundles.items() if hashes), None)
    return ("kernel changed", other) if other is not None else ("not in any bundle", "")


def candidates(space: Sequence[model.Config], decision: Decision) -> list[model.Config]:
    """What a miss measures: the space without known-bad configs (all of it if nothing else is left), and
    for a seed decision only the seeds and their neighbours."""
    allowed = [c for c in space if c not in decision.excluded] or list(space)
    if decision.kind != "seed":
        return allowed
    keep = {s for s in decision.configs if s in allowed}
    for seed in list(keep):
        keep.update(neighbours(seed, allowed))
    return [c for c in allowed if c in keep] or allowed


def measured_entry(measured: Measured, found_by: model.FoundBy = model.FoundBy.ONLINE) -> model.Entry | None:
    """The entry a miss leaves behind: the fastest config (or `chosen`, where the caller chose one of the
    timed configs on more than its time alone, or chose without timings it could hand over), every config's
    time, how it was found (None when no config ran and none was chosen: nothing to remember)."""
    timings, chosen = measured.timings, measured.chosen
    ranked = sorted((t, repr(c), c) for c, t in timings.items() if t != float("inf"))
    if not ranked and chosen is None:
        return None
    best = chosen if chosen is not None and (chosen in timings or not ranked) else ranked[0][2]
    kept = ranked[:KEPT_TIMINGS] + [r for r in ranked[KEPT_TIMINGS:] if r[2] == best]
    return model.Entry(
        kernel=measured.identity,
        key=measured.key,
        best=best,
        timings=tuple(model.Timing(c, float(t), measured.resident.get(c, 0)) for t, _, c in kept),
        found_by=model.FoundBy.SEEDED if measured.decision.kind == "seed" else found_by,
        configs_benchmarked=measured.benchmarked,
    )


def launched(tried: Sequence[model.Config], measured: Measured, kept: model.Entry | None) -> model.Config:
    """The config a miss launches with: the entry kept for it, else the fastest of those timed (Triton's
    choice among configs that all failed), else the one candidate."""
    if kept is not None:
        return kept.best
    if measured.timings:
        return min(measured.timings, key=lambda c: measured.timings[c])
    return tried[0]


def compiled_kernel_entry(kernel_name: str, artifact: model.Artifact) -> model.Entry:
    """A compiled kernel kept on its own (no tuning decision): an entry under `compiled:<name>`, keyed by
    Triton's cache key, that only the cache manager reads. Never a hit for an autotuned kernel."""
    identity = model.KernelIdentity(f"{COMPILED_PREFIX}{kernel_name}", artifact.cache_key)
    return model.Entry(identity, (), artifact.config, found_by=model.FoundBy.CAPTURED, artifacts=(artifact,))
