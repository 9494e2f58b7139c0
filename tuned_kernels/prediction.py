"""A config for a key no bundle tuned, predicted from what the bundles measured at the keys they did. Pure.

A tuned key's entry holds the time of every config it timed. A config's regret at that key is how much
slower it ran there than the key's winner (the log of the ratio). The prediction for an unseen key is the
allowed config with the least regret over the nearest tuned keys (`nearest.key_distance`: a key Triton
specializes otherwise counts as further), each weighted by that distance less the part every neighbour
shares. A config a neighbour has no time for (its pruning left it out there, or the entry kept only the
best few) counts as slower than every config it timed; a config that failed or gave wrong numbers at a
neighbour is never predicted. A neighbour that kept no timings votes for its winner alone, so with one
neighbour of that kind the prediction is the nearest key's config.

Where the kernel's tiling is known (`Tiling`: its key's names and the GPU's multiprocessors), a
neighbour's times are first carried to the unseen key by the waves of programs each config launches at
either, a wave being as many programs as the multiprocessors hold at once (as many as the tuned entry
says a multiprocessor held of that config, else one each; one each for a kernel that loops over its tiles,
a program per multiprocessor). A matmul tile of 128 rows covers M = 512 in 4
programs and M = 640 in 5, so on a GPU of 132 multiprocessors and 32 column tiles that config runs one wave
at 512 and two at 640, where a tile of 64 rows runs two and three. Which config wins between two tuned keys
follows from that more than from either key's winner.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tuned_kernels import model
from tuned_kernels.nearest import SPECIALIZED_OTHERWISE, key_distance, specialized_otherwise

NEIGHBOURS = 4  # the nearest tuned keys a prediction weighs
BLOCK_NAMES = ("BLOCK_{}", "BLOCK_SIZE_{}", "B{}")  # a config parameter that tiles key size {}
REDUCTIONS = frozenset({"K"})  # a GEMM's reduction, looped over in each program, by the names' convention
UNTIMED_PENALTY = math.log(1.25)  # beyond the slowest config a neighbour timed
_NEAR = 0.25  # a distance (sum of log2 ratios) at which a neighbour's weight has halved


@dataclass(frozen=True)
class Prediction:
    config: model.Config
    nearest: model.TuningKey  # the nearest tuned key
    source: str  # the file that holds it
    neighbours: int  # how many tuned keys were weighed


@dataclass(frozen=True)
class Tiling:
    """How a kernel splits its key's sizes into programs: a key element named D (not a reduction) is cut
    into blocks by a config parameter BLOCK_D, BLOCK_SIZE_D or BD; the programs run in waves of as many as
    the multiprocessors hold."""

    names: tuple[str, ...]  # the key's elements' names (the autotuner's key arguments), in order
    processors: int  # the GPU's multiprocessors (0: not known)
    persistent: bool = False  # a program per multiprocessor loops over the tiles: one resident at a time

    def waves(self, key: model.TuningKey, config: model.Config, resident: int = 1) -> int | None:
        """None where no key size is tiled by this config or the GPU is not known (`resident`: programs of
        it a multiprocessor holds)."""
        params = dict(config.kwargs)
        programs, tiled = 1, False
        for name, size in zip(self.names, key, strict=False):
            if name in REDUCTIONS or not isinstance(size, int) or isinstance(size, bool):
                continue
            block = next((params[b.format(name)] for b in BLOCK_NAMES if b.format(name) in params), None)
            if isinstance(block, int) and not isinstance(block, bool) and block > 0:
                programs, tiled = programs * -(-max(size, 1) // block), True
        at_once = self.processors * (1 if self.persistent else max(resident, 1))
        return -(-programs // at_once) if tiled and self.processors > 0 else None


def predict(
    key: model.TuningKey,
    tuned: Mapping[model.TuningKey, tuple[model.Entry, str]],
    allowed: Sequence[model.Config],
    tiling: Tiling | None = None,
) -> Prediction | None:
    """The allowed config with the least weighted regret over the nearest comparable tuned keys (None when
    no tuned key is comparable, none timed any allowed config, or every allowed config failed at one);
    with `tiling`, each neighbour's times carried to this key by the waves each config runs at either."""
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
        regrets = _regrets(tuned[k][0], _carried(tiling, key, tuned[k][0]))
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


def _carried(
    tiling: Tiling | None, key: model.TuningKey, tuned: model.Entry
) -> Callable[[model.Config], float]:
    """A config's time at `key` over its time at the `tuned` entry's, as the waves of programs it runs at
    each say, as many of its programs held at once at both (1 for every config where the tiling is not
    known or does not cover every config the entry timed: carrying some and not others would favour them)."""
    if tiling is None:
        return lambda _: 1.0
    factors: dict[model.Config, float] = {}
    for config, held in {t.config: t.resident for t in tuned.timings}.items():
        here, there = tiling.waves(key, config, held), tiling.waves(tuned.key, config, held)
        if here is None or there is None:  # a config this tiling does not cover: none carried, not some
            factors = {}
            break
        factors[config] = here / there
    return lambda config: factors.get(config, 1.0)


def _regrets(
    entry: model.Entry, carried: Callable[[model.Config], float] = lambda _: 1.0
) -> dict[model.Config, float]:
    """Per config this entry timed, its time carried to the key predicted for: log(that / the fastest's);
    infinity for the configs it rejected."""
    times = {t.config: t.time_ms * carried(t.config) for t in entry.timings if 0.0 < t.time_ms < math.inf}
    regrets: dict[model.Config, float] = {r.config: math.inf for r in entry.rejected}
    if not times:
        regrets[entry.best] = 0.0
        return regrets
    fastest = min(times.values())
    regrets.update({config: math.log(t / fastest) for config, t in times.items()})
    return regrets
