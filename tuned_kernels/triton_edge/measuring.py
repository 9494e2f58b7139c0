"""The measuring engine, one for `tune` and for a miss at run time: compile a key's candidate configs in
parallel into Triton's own cache, then time them, briefly first and in full only for the few that could win
(`search.contenders`).

Compiles run on threads: Triton's compiler spends most of a compile in its C++ passes and in `ptxas`, a
separate process, so threads overlap them without a process pool, which a forked child (a DataLoader
worker) or a torch.compile'd program could not always start. `TUNED_KERNELS_MISS_JOBS` sets how many
compile at once for a miss (default: the CPU count, at most 16); never more than the machine has.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from tuned_kernels import fallbacks, model
from tuned_kernels.search import SCREEN_KEEP
from tuned_kernels.setting_values import count
from tuned_kernels.triton_edge import cache_manager
from tuned_kernels.triton_edge.compile import is_compiled_kernel, make_driver, warmup
from tuned_kernels.triton_edge.interpreter import interpreting

MISS_JOBS_ENV = "TUNED_KERNELS_MISS_JOBS"
DEFAULT_MISS_JOBS = 16
BRIEF_WARMUP_MS, BRIEF_REP_MS = 5, 10  # a first pass over every candidate (Triton's own: 25 and 100)


def miss_jobs(environ: Mapping[str, str] = os.environ, cpus: int | None = None) -> int:
    """How many configs of a missed key compile at once: `TUNED_KERNELS_MISS_JOBS` (a positive integer),
    else the CPU count up to 16; at most the CPU count."""
    cpus = max(1, cpus or os.cpu_count() or 1)
    return min(count(environ.get(MISS_JOBS_ENV)) or DEFAULT_MISS_JOBS, cpus)


def submit_compiles(
    pool: ThreadPoolExecutor, autotuner: Any, named: Mapping[str, Any], configs: Sequence[model.Config]
) -> list[Future[None]]:
    """Compiles `configs` of a launch with these arguments on `pool`, into Triton's cache (nothing on the
    interpreter or for a kernel Triton does not compile). A config that fails is left for its timing to
    reject with the reason, as Triton's autotuner would."""
    if interpreting() or not is_compiled_kernel(autotuner) or not make_driver():
        return []  # nothing to compile, or no GPU driver to compile for: its timing says why it fails
    first_load, loaded = threading.Lock(), threading.Event()

    def load(compiled: Any) -> None:
        """Loaded onto the GPU, its launcher built: Triton would do both at the config's first timing. The
        first config loads alone: the launcher, built from the kernel's signature, is the same for every
        config, and threads loading at once would each build it."""
        init_handles = getattr(compiled, "_init_handles", lambda: None)
        if loaded.is_set():
            init_handles()
            return
        with first_load:
            init_handles()
            loaded.set()

    def compile_one(config: model.Config) -> None:
        try:
            load(warmup(autotuner, named, config))
        except Exception:  # its timing compiles it again, one at a time, and rejects it if it fails there
            fallbacks.count("parallel_compile")

    return [pool.submit(compile_one, c) for c in configs]


def compile_all(autotuner: Any, named: Mapping[str, Any], configs: Sequence[model.Config], jobs: int) -> None:
    """Compiles `configs` on `jobs` threads and waits for them (one job: the timing compiles each, as
    Triton's autotuner does). A capture keeps none of these compiles: they are candidates being timed (the
    winner's compiled kernel goes with its entry)."""
    if jobs <= 1 or len(configs) <= 1:
        return
    pool = ThreadPoolExecutor(min(jobs, len(configs)), thread_name_prefix="tuned-kernels-miss")
    with cache_manager.recording_paused(), pool:
        wait(submit_compiles(pool, autotuner, named, configs))


@contextlib.contextmanager
def timed_briefly(autotuner: Any) -> Iterator[None]:
    """Within this block, the autotuner's own timing (`do_bench`, Triton's benchmarker) runs briefly."""
    from triton.testing import do_bench

    def brief(kernel_call: Any, quantiles: Any = None, **_: Any) -> Any:
        return do_bench(kernel_call, warmup=BRIEF_WARMUP_MS, rep=BRIEF_REP_MS, quantiles=quantiles)

    saved = autotuner.__dict__.pop("do_bench", None)
    autotuner.__dict__["do_bench"] = brief
    try:
        yield
    finally:
        autotuner.__dict__.pop("do_bench", None)
        if saved is not None:
            autotuner.__dict__["do_bench"] = saved


def screens(autotuner: Any, candidates: int) -> bool:
    """Whether a first brief pass is worth it: on a GPU, with Triton's own benchmarker (a kernel that
    brought its own `do_bench` is timed only with it), over more candidates than a full timing keeps."""
    return not interpreting() and getattr(autotuner, "_do_bench", None) is None and candidates > SCREEN_KEEP
