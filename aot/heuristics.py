"""Seed heuristics (after Helion's): one small class each, eligible per target and kernel family.

A heuristic proposes configs likely to be near the best for a case; `--strategy seeded` starts there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tuned_kernels.aot.corpus import Case

from tuned_kernels.model import Config, Entry, Target, TuningKey
from tuned_kernels.nearest import nearest_key


class SeedHeuristic(Protocol):
    def is_eligible(self, target: Target, family: str) -> bool: ...

    def seed_configs(self, target: Target, case: Case, space: Sequence[Config]) -> list[Config]: ...


def _closest(space: Sequence[Config], want: dict[str, int]) -> list[Config]:
    """The configs of `space` whose fields are nearest `want` (ties kept, at most 4)."""

    def distance(config: Config) -> float:
        fields = {**dict(config.kwargs), "num_warps": config.num_warps, "num_stages": config.num_stages}
        return sum(abs(float(fields.get(k, v) or 0) - v) / max(v, 1) for k, v in want.items())  # type: ignore[arg-type,unused-ignore]

    ranked = sorted(space, key=lambda c: (distance(c), repr(c)))
    return ranked[:4]


class MatmulTileHeuristic:
    """Skinny M (decode) wants short M tiles and long K; big shapes want big tiles, and on Hopper-class
    chips the 128 x 256 x 64 tile with 8 warps and 3 stages (Triton's own tutorial's best on an H100)."""

    def is_eligible(self, target: Target, family: str) -> bool:
        return family.startswith("matmul") and family != "matmul_skinny"

    def seed_configs(self, target: Target, case: Case, space: Sequence[Config]) -> list[Config]:
        m = int(case["M"])
        big_chip = target.arch.startswith(("sm90", "sm100", "gfx94", "gfx95"))
        if m <= 64:
            want = {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4, "num_stages": 4}
        elif big_chip:
            want = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}
        else:
            want = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}
        return _closest(space, want)


class SplitKHeuristic:
    """The split-K kernel for skinny M: enough programs to keep every SM loading B (a few K parts per
    64-column tile), long K steps, a deep pipeline."""

    def is_eligible(self, target: Target, family: str) -> bool:
        return family == "matmul_skinny"

    def seed_configs(self, target: Target, case: Case, space: Sequence[Config]) -> list[Config]:
        sms = target.multiprocessor_count or 132  # a target named without its device: an H100's
        split = max(1, min(16, 2 * sms // max(1, int(case["N"]) // 64)))
        want = {"BLOCK_N": 64, "BLOCK_K": 128, "SPLIT_K": 1 << (split.bit_length() - 1), "num_stages": 4}
        return _closest(space, want)


class RowBlockHeuristic:
    """Row-wise kernels: the smallest block that holds the row, warps growing with it."""

    def is_eligible(self, target: Target, family: str) -> bool:
        return family in ("softmax", "layer_norm", "rms_norm")

    def seed_configs(self, target: Target, case: Case, space: Sequence[Config]) -> list[Config]:
        n = int(case["N"])
        block = 1 << max(n - 1, 1).bit_length()
        return _closest(space, {"BLOCK_N": block, "num_warps": min(16, max(1, block // 512))})


HEURISTICS: tuple[SeedHeuristic, ...] = (MatmulTileHeuristic(), SplitKHeuristic(), RowBlockHeuristic())


def heuristic_seeds(target: Target, family: str, case: Case, space: Sequence[Config]) -> list[Config]:
    seeds: list[Config] = []
    for heuristic in HEURISTICS:
        if heuristic.is_eligible(target, family):
            seeds += heuristic.seed_configs(target, case, space)
    return seeds


def seeds_for(
    target: Target,
    family: str,
    case: Case,
    key: TuningKey,
    space: Sequence[Config],
    earlier: Sequence[Entry],
) -> list[Config]:
    """Where a seeded search starts: the winner and runners-up of the nearest key tuned `earlier` (entries
    of this kernel from a previous run), then the heuristics' seeds."""
    seeds = heuristic_seeds(target, family, case, space)
    by_key = {e.key: e for e in earlier}
    near = nearest_key(key, by_key)
    if near is not None:
        seeds = [by_key[near].best, *(t.config for t in by_key[near].timings[:2]), *seeds]
    return seeds
