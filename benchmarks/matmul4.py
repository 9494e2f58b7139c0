"""The built-in fp16 matmul on the four shapes of the measured baseline in ANCHORS.md (a benchmark corpus;
the decode shape is the split-K kernel's)."""

import dataclasses

from tuned_kernels.aot.corpus import Case
from tuned_kernels.aot.kernels.builtin import CORPUS as BUILTIN
from tuned_kernels.aot.kernels.skinny_matmul import SKINNY_M

SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (16, 4096, 4096), (2048, 11008, 4096))
CASES = [Case.of(M=m, N=n, K=k, dtype="float16") for m, n, k in SHAPES]
_FAMILIES = {f.name: f for f in BUILTIN}
CORPUS = (
    dataclasses.replace(
        _FAMILIES["matmul"], shapes={"bench": [c for c in CASES if c["M"] > SKINNY_M], "quick": []}
    ),
    dataclasses.replace(
        _FAMILIES["matmul_skinny"],
        shapes={"bench": [c for c in CASES if c["M"] <= SKINNY_M], "quick": CASES[2:3]},
    ),
)
