"""A config for a key no bundle tuned, predicted from what the bundles measured at the keys they did. Pure.

A tuned key's entry holds the time of every config it timed. A config's regret at that key is how much
slower it ran there than the key's winner (the log of the ratio). The prediction for an unseen key is the
allowed config with the least regret over the nearest tuned keys (`nearest.key_distance`: a key Triton
specializes otherwise counts as further), each weighted by that distance less the part every neighbour
shares. A config a neighbour has no time for (its pruning left it out there, or the entry kept only the
best few) counts as slower than every config it timed; a config that failed or gave wrong numbers at a
neighbour is never predicted. A neighbour that kept no timings votes for its winner alone, so with one
neighbour of that kind the prediction is the nearest key's config.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tuned_kernels import model
from tuned_kernels.nearest import SPECIALIZED_OTHERWISE, key_distance, specialized_otherwise

NEIGHBOURS = 4  # the nearest tuned keys a prediction weighs
UNTIMED_PENALTY = math.log(1.25)  # beyond the slowest config a neighbour timed
_NEAR = 0.25  # a distance (sum of log2 ratios) at which a neighbour's weight has halved


@dataclass(frozen=True)
class Prediction:
    config: model.Config
    nearest: model.TuningKey  # the nearest tuned key
    source: str  # the file that holds it
    neighbours: int  # how many tuned keys were weighed


def predict(
    key: model.TuningKey,
    tuned: Mapping[model.TuningKey, tuple[model.Entry, str]],
    allowed: Sequence[model.Config],
) -> Prediction | None:
    """The allowed config with the least weighted regret over the nearest comparable tuned keys (None when
    no tuned key is comparable, none timed any allowed config, or every allowed config failed at one)."""
    near = sorted((distance, repr(k), k) for k in tuned if (distance := key_distance(key, k)) is not None)[
        :NEIGHBOURS
    ]
    if not near or not allowed:
        return None
    # where every neighbour is specialized otherwise, they weigh by size alone
    floor = SPECIALIZED_OTHERWISE * min(specialized_otherwise(key, k) for _, _, k in near)
    totals = dict.fromkeys(allowed, 0.0)
    informed = False  # some allowed config was timed (or won) at a neighbour: else nothing to go on
    for distance, _, k in near:
        weight = _NEAR / (_NEAR + distance - floor)
        regrets = _regrets(tuned[k][0])
        untimed = max((r for r in regrets.values() if math.isfinite(r)), default=0.0) + UNTIMED_PENALTY
        for config in list(totals):
            regret = regrets.get(config, untimed)
            informed = informed or config in regrets
            if math.isinf(regret):
                del totals[config]
            else:
                totals[config] += weight * regret
    if not totals or not informed:
        return None
    best = min(totals, key=lambda c: (totals[c], repr(c)))
    _, _, nearest = near[0]
    return Prediction(best, nearest, tuned[nearest][1], len(near))


def _regrets(entry: model.Entry) -> dict[model.Config, float]:
    """Per config this entry timed: log(its time / the winner's); infinity for the configs it rejected."""
    times = {t.config: t.time_ms for t in entry.timings if 0.0 < t.time_ms < math.inf}
    regrets: dict[model.Config, float] = {r.config: math.inf for r in entry.rejected}
    if not times:
        regrets[entry.best] = 0.0
        return regrets
    fastest = min(times.values())
    regrets.update({config: math.log(t / fastest) for config, t in times.items()})
    return regrets
