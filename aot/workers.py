"""The worker processes that join `tune` on a host of several GPUs, one per GPU after the first: started
before the starting process imports torch where the GPUs can be counted without it (the NVIDIA driver's
list and `CUDA_VISIBLE_DEVICES`), so their imports and warm-up run beside its own. Light: imports no torch.

Each worker (`python -m tuned_kernels.aot.tune_command WORKER.json`: the request, its part file and the
claims folder, as data) waits for the tuning order on its standard input; a worker whose input closes
before the order came ends quietly."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from tuned_kernels.aot.tune_report import shared_jobs
from tuned_kernels.aot.tune_request import TuneRequest
from tuned_kernels.aot.work import visible_device_id

NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")  # a folder per GPU the driver sees


def visible_gpus(environ: Mapping[str, str], listed: Sequence[str]) -> int | None:
    """How many GPUs CUDA will show this process, from the driver's list and `CUDA_VISIBLE_DEVICES` as CUDA
    reads it (the list ends at its first index that names no GPU); None where that cannot be told so (no
    list, device UUIDs or MIG instances named)."""
    if not listed:
        return None
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return len(listed)
    count = 0
    for entry in (e.strip() for e in visible.split(",")):
        if not entry.lstrip("-").isdigit():
            return None if entry else count
        if not 0 <= int(entry) < len(listed):
            break
        count += 1
    return count


def listed_gpus() -> list[str]:
    try:
        return sorted(os.listdir(NVIDIA_GPUS))
    except OSError:
        return []


def gpus_without_torch() -> int | None:
    """How many GPUs CUDA will show this process, told without importing torch (`visible_gpus` of this
    process's environment and the driver's list); None where that cannot be told so."""
    return visible_gpus(os.environ, listed_gpus())


class Workers:
    """The worker processes of one run, their claims folder and part files (in a folder of their own),
    started for `gpus` GPUs; this process is GPU 0's and writes part 0."""

    def __init__(self, request: TuneRequest, gpus: int) -> None:
        self.gpus = gpus
        self._folder = tempfile.TemporaryDirectory(prefix="tuned-kernels-workers-")
        root = Path(self._folder.name)
        self.claims = root / "claims"
        self.claims.mkdir()
        self.parts = [str(root / f"part{gpu}.pb") for gpu in range(gpus)]
        self.resume = request.resume and Path(request.output).exists()
        if self.resume:  # every participant skips the keys finished earlier
            for part in self.parts:
                shutil.copyfile(request.output, part)
        self.procs: list[subprocess.Popen[bytes]] = []
        try:
            self.procs = [self._start(request, gpu) for gpu in range(1, gpus)]
        except BaseException:
            self.close()
            raise

    @staticmethod
    def early(request: TuneRequest) -> Workers | None:
        """The workers of a run on this host's GPUs, started now where they can be counted without torch
        (None: one GPU, or not known)."""
        gpus = gpus_without_torch()
        if gpus is None or gpus < 2:
            return None
        return Workers(dataclasses.replace(request, options=shared_jobs(request.options, gpus)), gpus)

    def _start(self, request: TuneRequest, gpu: int) -> subprocess.Popen[bytes]:
        spec = self.claims.parent / f"worker{gpu}.json"
        work = {
            "request": dataclasses.replace(request, output=self.parts[gpu], resume=self.resume).to_json(),
            "claims": str(self.claims),
            "gpu": f"GPU {visible_device_id(gpu)}",
            "order": str(self.order_path),
        }
        spec.write_text(json.dumps(work))
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": visible_device_id(gpu)}
        # the workers' progress goes to stderr: stdout carries this command's own (perhaps JSON) summary
        argv = [sys.executable, "-m", "tuned_kernels.aot.tune_command", str(spec)]
        return subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=sys.stderr)

    @property
    def order_path(self) -> Path:
        return self.claims.parent / "order.json"

    def send_order(self, order: Sequence[int]) -> None:
        """The tuning order written beside the claims, then a line on each worker's standard input that says
        it is there (a worker that died is left to the exit status check)."""
        self.order_path.write_text(json.dumps(list(order)))
        for proc in self.procs:
            assert proc.stdin is not None
            with contextlib.suppress(OSError):
                proc.stdin.write(b"go\n")
                proc.stdin.flush()

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()

    def wait(self) -> list[int]:
        """Each worker's input closed (one still waiting for its order ends quietly), then the GPUs of those
        that failed."""
        for proc in self.procs:
            assert proc.stdin is not None
            with contextlib.suppress(OSError):
                proc.stdin.close()
        return [gpu for gpu, p in enumerate(self.procs, 1) if p.wait() != 0]

    def close(self) -> None:
        """The workers ended (as `wait`) and their folder removed."""
        self.wait()
        self._folder.cleanup()
