"""A test corpus for distributed tuning: the doubling kernel over six keys, where a run can be made to lose
its worker (DASK_CORPUS_DIE_ONCE: a marker file; the first worker to run n=300 creates it and dies) or to
hold a key until told (DASK_CORPUS_HOLD: n=500 waits, at most 120 s, until that file exists)."""

import os
import time
from pathlib import Path

import torch
from doubling import double, doubling_kernel
from tuned_kernels.aot.corpus import Case, KernelFamily


def run(inputs: dict) -> torch.Tensor:
    n = inputs["x"].numel()
    if inputs["x"].is_meta:  # the key probed on shapes alone, before any worker runs the op
        return double(inputs["x"], torch.empty_like(inputs["x"]))
    marker = os.environ.get("DASK_CORPUS_DIE_ONCE")
    if marker and n == 300 and not Path(marker).exists():
        Path(marker).touch()
        os._exit(1)  # the worker process dies mid-key
    hold = os.environ.get("DASK_CORPUS_HOLD")
    deadline = time.monotonic() + 120
    while hold and n == 500 and not Path(hold).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return double(inputs["x"], torch.empty_like(inputs["x"]))


CORPUS = (
    KernelFamily(
        name="doubling",
        kernel=doubling_kernel,
        make_inputs=lambda case, device, gen: {"x": torch.randn(case["n"], generator=gen).to(device)},
        run=run,
        reference=lambda i: i["x"].double() * 2,
        tolerance=(1e-6, 1e-6),
        shapes={"quick": [Case.of(n=n) for n in (100, 200, 300, 400, 500, 600)]},
    ),
)
