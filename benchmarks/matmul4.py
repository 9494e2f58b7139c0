"""The built-in fp16 matmul on the four shapes of the measured baseline in ANCHORS.md (a benchmark corpus;
the decode shape is the split-K kernel's, the others the copy engine's kernel's on Hopper, else the tile
kernel's)."""

import dataclasses

from tuned_kernels.aot.corpus import Case
from tuned_kernels.aot.kernels.builtin import CORPUS as BUILTIN
from tuned_kernels.aot.kernels.builtin import by_kernel

SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (16, 4096, 4096), (2048, 11008, 4096))
CASES = [Case.of(M=m, N=n, K=k, dtype="float16") for m, n, k in SHAPES]
_FAMILIES = {f.name: f for f in BUILTIN}
_SHAPES = {"bench": CASES, "quick": CASES[2:3]}
CORPUS = (
    dataclasses.replace(_FAMILIES["matmul"], shapes=by_kernel(_SHAPES, skinny=False)),
    dataclasses.replace(_FAMILIES["matmul_skinny"], shapes=by_kernel(_SHAPES, skinny=True)),
    dataclasses.replace(_FAMILIES["matmul_tma"], shapes=by_kernel(_SHAPES, skinny=False)),
)
