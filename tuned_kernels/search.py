"""Search strategies over a config space. Pure: measuring is a callback.

`exhaustive` measures every config. `seeded` (after Helion's autotuner) measures seed configs first, then
walks to neighbours of the best ones (one parameter moved one step in the space's own values) until no
neighbour improves, so good seeds make the search much shorter without constraining where it can end.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from tuned_kernels.model import Config

T = TypeVar("T")
Measure = Callable[[Config], float | None]  # milliseconds, or None for a rejected config


def _fields(config: Config) -> dict[str, object]:
    return {
        **dict(config.kwargs),
        "num_warps": config.num_warps,
        "num_stages": config.num_stages,
        "num_ctas": config.num_ctas,
        "maxnreg": config.maxnreg,
    }


def neighbours(config: Config, space: Sequence[Config]) -> list[Config]:
    """Configs of `space` equal to `config` but for one field, set to an adjacent value of that field."""
    mine = _fields(config)
    values: dict[str, list[object]] = {}
    for other in space:
        for name, value in _fields(other).items():
            if value not in values.setdefault(name, []):
                values[name].append(value)
    for name in values:
        values[name].sort(key=lambda v: (v is None, v if isinstance(v, (int, float)) else str(v)))
    found = []
    for other in space:
        theirs = _fields(other)
        diff = [n for n in mine if mine[n] != theirs.get(n)]
        if len(diff) == 1 and diff[0] in values:
            order = values[diff[0]]
            if mine[diff[0]] in order and abs(order.index(mine[diff[0]]) - order.index(theirs[diff[0]])) == 1:
                found.append(other)
    return found


def exhaustive(space: Iterable[Config], measure: Measure) -> dict[Config, float | None]:
    return {config: measure(config) for config in space}


def seeded(
    space: Sequence[Config],
    seeds: Sequence[Config],
    measure: Measure,
    beam: int = 2,
    max_measured: int | None = None,
) -> dict[Config, float | None]:
    """Hill-climbs from `seeds` (those in `space`), expanding the `beam` best configs each round."""
    measured: dict[Config, float | None] = {}
    budget = max_measured if max_measured is not None else len(space)

    def run(batch: Sequence[Config]) -> None:
        for config in batch:
            if config not in measured and len(measured) < budget:
                measured[config] = measure(config)

    in_space = set(space)
    run([s for s in dict.fromkeys(seeds) if s in in_space] or list(space[:1]))
    expanded: set[Config] = set()
    while len(measured) < budget:
        ranked = sorted((t, repr(c), c) for c, t in measured.items() if t is not None)
        frontier = [c for _, _, c in ranked[:beam] if c not in expanded]
        if not frontier:
            break
        for config in frontier:
            expanded.add(config)
            run(neighbours(config, space))
    return measured


# Timing that stops early on losers: every candidate is timed briefly first; only those whose first time is
# within SCREEN_WITHIN of the fastest (at least two, at most SCREEN_KEEP, fastest first) are timed in full,
# and the fastest of those wins. A brief timing errs by a few percent; a config 10 % slower at first is not
# the winner of a full timing unless the brief one erred by more than that.
SCREEN_WITHIN = 1.10
SCREEN_KEEP = 5


def contenders(
    first_pass: Mapping[T, float], within: float = SCREEN_WITHIN, most: int = SCREEN_KEEP
) -> list[T]:
    """The candidates a full timing decides between, fastest first (none when none ran)."""
    ran = sorted((t, i, c) for i, (c, t) in enumerate(first_pass.items()) if math.isfinite(t))
    if not ran:
        return []
    fastest = ran[0][0]
    close = [c for t, _, c in ran if t <= fastest * within][:most]
    return close if len(close) >= 2 else [c for _, _, c in ran[:2]]


# Before a winner is kept, the configs close to the fastest are timed again, in turn: a whole timing window can
# run slow or fast (the card's clock and power, a neighbour's traffic) by more than such configs differ: one
# config's windows on an H200 spread by up to 16 % over five rounds. Configs timed back to back share more of the
# card's state than windows apart, so each finalist is weighed by its time over the round's leader (the first
# pass's fastest), the median over the rounds, each round in the other order than the last. Its first-pass time
# is left out: it was chosen for running fast there, and a window that ran fast by chance would keep it ahead.
# (Measured on 62 keys, this did not make two runs keep the same winners more often: times also move between
# runs by more than near-equal configs differ, BENCHMARKS.md.) A config whose first window ran more than 4 %
# slow is not timed again.
FINAL_WITHIN = 0.04
# the fastest of those within FINAL_WITHIN (those within TIE, which the winner is chosen among: all of them)
FINALISTS = 3
FINAL_ROUNDS = 2
TIE = 0.01  # configs within 1 % of the fastest measured are one speed: timing noise between runs and cards


def finalists(
    measured: Mapping[Config, float | None], within: float = FINAL_WITHIN, most: int = FINALISTS
) -> list[Config]:
    """The configs timed again before a winner is kept: those within `within` of the fastest, fastest first,
    at most `most`, and every one within `TIE` of it (each may be the winner: it is weighed only against
    configs timed as often); none where fewer than two are that close (nothing to decide)."""
    ran = sorted((t, repr(c), c) for c, t in measured.items() if t is not None)
    close = [(t, c) for t, _, c in ran if t <= ran[0][0] * (1 + within)]
    chosen = [c for n, (t, c) in enumerate(close) if n < most or t <= ran[0][0] * (1 + TIE)]
    return chosen if len(chosen) >= 2 else []


def retimed(
    measured: Mapping[Config, float | None], measure: Measure, rounds: int = FINAL_ROUNDS
) -> tuple[dict[Config, float | None], list[Config]]:
    """`measured` with its `finalists` timed `rounds` more times each, in turn (one window of each per round,
    the order reversed each round), and the finalists weighed: each one's time becomes its `paired` time.
    A finalist that fails or is rejected on every second timing, where others ran, is left out (None, as a
    rejected config); where none ran again (or `rounds` is 0, or no two are close), every one keeps its
    first time and none is weighed."""
    times = dict(measured)
    chosen = finalists(measured) if rounds > 0 else []
    windows: list[dict[Config, float]] = []
    for round_ in range(rounds):
        window: dict[Config, float] = {}
        for config in chosen if round_ % 2 == 0 else chosen[::-1]:
            try:
                again = measure(config)
            except Exception:  # it ran once; a config's failure must not stop the tune
                again = None
            if again is not None and math.isfinite(again) and again > 0:
                window[config] = again
        windows.append(window)
    weighed = paired(chosen, windows)
    if weighed:
        times.update({c: weighed.get(c) for c in chosen})
    return times, [c for c in chosen if c in weighed]


def paired(chosen: Sequence[Config], windows: Sequence[Mapping[Config, float]]) -> dict[Config, float]:
    """The finalists' times from rounds of back-to-back windows: the leader's median window times each
    config's median ratio to the leader within a round. The leader is the finalist timed again most often
    (the first-pass fastest of those); a config never timed beside it gets no time."""
    present = [c for c in chosen if any(c in w for w in windows)]
    if not present:
        return {}
    leader = max(present, key=lambda c: sum(c in w for w in windows))  # the first of the most timed
    beside = [w for w in windows if leader in w]
    base = statistics.median([w[leader] for w in beside])
    ratios = {c: [w[c] / w[leader] for w in beside if c in w] for c in chosen}
    return {c: base * statistics.median(r) for c, r in ratios.items() if r}


def decided(
    measured: Mapping[Config, float | None],
    space: Sequence[Config],
    measure: Measure,
    rounds: int = FINAL_ROUNDS,
) -> tuple[dict[Config, float | None], Config | None]:
    """The times once the finalists were timed again (`retimed`), and the config to keep: the `winner` of
    the finalists weighed where there are some (each weighed beside the same leader), else of every config
    measured."""
    times, chosen = retimed(measured, measure, rounds)
    return times, winner({c: times[c] for c in chosen} or times, space)


def winner(
    measured: Mapping[Config, float | None], space: Sequence[Config], tie: float = TIE
) -> Config | None:
    """The config to keep: of those measured within `tie` of the fastest, the first in `space` (the kernel's
    own order), so two runs that time near-equal configs in another order, or on another card of the same
    kind, keep the same one; None when every config was rejected."""
    times = {c: t for c, t in measured.items() if t is not None}
    if not times:
        return None
    bound = min(times.values()) * (1 + tie)
    ranked = [c for c in space if c in times] + [c for c in times if c not in space]
    return next(c for c in ranked if times[c] <= bound)
