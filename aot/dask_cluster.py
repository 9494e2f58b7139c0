"""Where `tune --dask ADDRESS` runs: a client of the Dask scheduler at ADDRESS (failing at once where
nothing listens), or of a cluster started on this machine for `local`: a worker per visible GPU, counted
from the NVIDIA driver's list where it can tell (so the workers start before this process imports torch),
each importing the tuner as it starts, with no stack sampling and this process's environment."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
from collections.abc import Iterator
from typing import Any

from tuned_kernels.aot.dask_worker import EARLY_WARM
from tuned_kernels.aot.work import visible_device_id
from tuned_kernels.aot.workers import gpus_without_torch

from tuned_kernels.errors import TunedKernelsError

GPU = "GPU"  # the worker resource a task takes: one GPU
LOCAL = "local"
DEFAULT_TIMEOUT_S = 30.0  # how long a scheduler at an address has to answer (--dask-timeout)


@contextlib.contextmanager
def connect(
    distributed: Any,
    address: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    request_json: dict[str, Any] | None = None,
) -> Iterator[Any]:
    """A client of the cluster at `address` (given `timeout_s` to answer), or of one started here for
    `local` (a worker per visible GPU, or `local:N`: N workers, each with one GPU resource), whose workers
    warm up for the run `request_json` as they start, and end at once when the client is done."""
    if address != LOCAL and not address.startswith(f"{LOCAL}:"):
        reach(address, timeout_s)
        with distributed.Client(address, timeout=f"{timeout_s}s") as client:
            yield client
        return
    specs = local_workers(address)
    options = {
        "nthreads": 1,
        "resources": {GPU: 1},
        "silence_logs": logging.ERROR,
        "preload": ["tuned_kernels.aot.dask_worker"],  # its imports made as each worker starts
        "config": {"distributed.worker.profile.enabled": False},  # no stack sampling beside the timer
    }
    if request_json is not None:
        run = json.dumps(request_json, sort_keys=True)
        specs = [{**env, EARLY_WARM: run} for env in specs]
    workers = {
        f"gpu{i}": {"cls": distributed.Nanny, "options": {**options, "env": env}}
        for i, env in enumerate(specs)
    }
    scheduler = {"cls": distributed.Scheduler, "options": {"dashboard_address": None}}
    # each worker in this process's environment, as tune's own workers: not Dask's defaults for numpy
    # workers (one OpenMP thread, the heap trimmed above 64 KiB free), which its nannies set before spawning
    import dask

    plain = dask.config.set({"distributed.nanny.pre-spawn-environ": {}})
    with (
        plain,
        distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=40) as cluster,
        distributed.Client(cluster) as client,
    ):
        try:
            yield client
        finally:
            _end_at_once(cluster)


def _end_at_once(cluster: Any) -> None:
    """A local cluster's workers killed, their nannies told first not to restart them: the run's results
    are in (or it failed), and a graceful close, each worker's interpreter unloading torch and its GPU, took
    0.9 s for two workers on a 2-core CPU machine (0.04 s killed). The nannies are read on the cluster's
    event loop, which changes them; none is killed unless all were told."""

    async def quiet() -> list[int]:
        nannies = list(cluster.workers.values())
        for nanny in nannies:
            nanny.close_gracefully(reason="tuned-kernels: the run is over")
        pids = (getattr(getattr(nanny, "process", None), "pid", None) for nanny in nannies)
        return [pid for pid in pids if pid]

    with contextlib.suppress(Exception):
        for pid in cluster.sync(quiet):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def reach(address: str, timeout_s: float) -> None:
    """Fails at once when nothing listens at a TCP scheduler's address (a refused connection), and within
    `timeout_s` when nothing answers; other addresses (tls://, ucx://, a scheduler file) are left to Dask."""
    scheme, sep, rest = address.partition("://")
    host_port = rest if sep else scheme
    if sep and scheme != "tcp":
        return
    host, colon, port = host_port.rpartition(":")
    if not colon or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except TimeoutError:
        raise TunedKernelsError(
            f"--dask {address}: no answer within {timeout_s:g} s (--dask-timeout)"
        ) from None
    except OSError as exc:
        raise TunedKernelsError(
            f"--dask {address}: cannot reach the scheduler: {exc.strerror or exc}"
        ) from None


def local_workers(address: str) -> list[dict[str, str]]:
    """Each local worker's environment: one per visible GPU (seeing that GPU alone), or `local:N` workers."""
    _, _, count = address.partition(":")
    if count:
        if not count.isdigit() or int(count) < 1:
            raise TunedKernelsError(f"--dask {address}: want local or local:N with N >= 1")
        return [{} for _ in range(int(count))]
    gpus = gpus_without_torch()
    if gpus is None:  # not told by the driver's list: CUDA's count
        import torch

        gpus = torch.cuda.device_count()
    return [{"CUDA_VISIBLE_DEVICES": visible_device_id(gpu)} for gpu in range(gpus)] or [{}]
