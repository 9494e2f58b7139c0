"""The shape of Helion's internals this edge stands in for (`internals.holds` checks it before `install`)."""

from __future__ import annotations

from tuned_kernels.internals import Shape

HELION_CACHE = Shape(
    "helion.autotuner.base_cache", "AutotuneCacheBase", ("get", "put", "_run_autotune_trials", "_get_cache_key"),
    "Helion kernels are searched as Helion does it; no bundle serves them",
)  # fmt: skip

SHAPES = (HELION_CACHE,)
