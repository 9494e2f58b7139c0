"""The shapes of Triton's internals this edge patches (`internals.holds` checks each before its patch)."""

from __future__ import annotations

from tuned_kernels.internals import Shape

TRITON_AUTOTUNER = Shape(
    "triton.runtime.autotuner", "Autotuner", ("prune_configs", "_bench", "run"),
    "its autotuned kernels are tuned as Triton does it; no bundle serves them", ("run", "prune_configs"),
)  # fmt: skip

SHAPES = (TRITON_AUTOTUNER,)
