"""The keys the speedup step tunes on 1, 2 and 4 GPUs: the built-in corpus's full matmul + bias +
activation, attention, softmax, layer norm and RMS norm keys (50), and the copy-engine matmul's at M=1024
(12; Hopper GPUs launch it there) — 62 keys over six families, every one tuned to the end."""

from __future__ import annotations

import dataclasses

from tuned_kernels.aot.kernels.builtin import CORPUS as BUILTIN

WHOLE = ("matmul_bias_act", "attention", "softmax", "layer_norm", "rms_norm")

CORPUS = [f for f in BUILTIN if f.name in WHOLE] + [
    dataclasses.replace(f, shapes={"full": [c for c in f.cases("full") if c["M"] == 1024]})
    for f in BUILTIN
    if f.name == "matmul_tma"
]
