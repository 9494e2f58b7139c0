"""The nearest tuned key to an unseen one (vLLM-style fallback for batch sizes, and seeds for tuning). Pure.

Keys are comparable when they have the same length and equal non-numeric elements (dtypes, flags);
distance is the sum of log2 ratios of the numeric elements, so M=1000 is nearer 1024 than 512, plus
SPECIALIZED_OTHERWISE for each integer that Triton specializes otherwise: it compiles an integer argument
differently when it equals 1 or is divisible by 16 (aligned loads), so N=5000 is nearer 4500 than 4992.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from tuned_kernels.model import Scalar, TuningKey

SPECIALIZED_OTHERWISE = 1.0  # in log2 units: as far as a key twice the size


def _numeric(value: Scalar) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def specialized_otherwise(a: TuningKey, b: TuningKey) -> int:
    """How many integer elements of two keys Triton would specialize differently (equal to 1; divisible by
    16), were they the kernel's integer arguments."""
    return sum(
        1
        for x, y in zip(a, b, strict=False)
        if isinstance(x, int) and isinstance(y, int) and not isinstance(x, bool) and not isinstance(y, bool)
        and (x == 1, x % 16 == 0) != (y == 1, y % 16 == 0)
    )  # fmt: skip


def key_distance(a: TuningKey, b: TuningKey) -> float | None:
    """None when the keys are not comparable."""
    if len(a) != len(b):
        return None
    total = 0.0
    for x, y in zip(a, b, strict=True):
        if _numeric(x) and _numeric(y):
            total += abs(math.log2(abs(float(x)) + 1.0) - math.log2(abs(float(y)) + 1.0))  # type: ignore[arg-type]
        elif x != y or type(x) is not type(y):
            return None
    return total + SPECIALIZED_OTHERWISE * specialized_otherwise(a, b)


def nearest_key(key: TuningKey, candidates: Iterable[TuningKey]) -> TuningKey | None:
    best: tuple[float, str, TuningKey] | None = None
    for candidate in candidates:
        distance = key_distance(key, candidate)
        if distance is not None and (best is None or (distance, repr(candidate)) < best[:2]):
            best = (distance, repr(candidate), candidate)
    return None if best is None else best[2]
