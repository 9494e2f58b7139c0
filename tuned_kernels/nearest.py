"""The nearest tuned key to an unseen one (vLLM-style fallback for batch sizes, and seeds for tuning). Pure.

Keys are comparable when they have the same length and equal non-numeric elements (dtypes, flags);
distance is the sum of log2 ratios of the numeric elements, so M=1000 is nearer 1024 than 512.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from tuned_kernels.model import Scalar, TuningKey


def _numeric(value: Scalar) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
    return total


def nearest_key(key: TuningKey, candidates: Iterable[TuningKey]) -> TuningKey | None:
    best: tuple[float, str, TuningKey] | None = None
    for candidate in candidates:
        distance = key_distance(key, candidate)
        if distance is not None and (best is None or (distance, repr(candidate)) < best[:2]):
            best = (distance, repr(candidate), candidate)
    return None if best is None else best[2]
