"""The built-in fp16 matmul on the four shapes of the measured baseline in ANCHORS.md (a benchmark corpus)."""

import dataclasses

from tuned_kernels.aot.corpus import Case
from tuned_kernels.aot.kernels.builtin import CORPUS as BUILTIN

SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (16, 4096, 4096), (2048, 11008, 4096))
CASES = [Case.of(M=m, N=n, K=k, dtype="float16") for m, n, k in SHAPES]
CORPUS = (dataclasses.replace(BUILTIN[0], shapes={"bench": CASES, "quick": CASES[2:3]}),)
