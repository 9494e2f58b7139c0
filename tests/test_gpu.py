"""GPU checks, run on a GPU machine by ci/gpu_run.sh (TUNED_KERNELS_GPU_TESTS=1); skipped, with that
reason, on the CPU-only CI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[1]


def test_detects_the_gpu_it_runs_on() -> None:
    import torch
    from tuned_kernels.hardware import detect

    target = detect()
    major, minor = torch.cuda.get_device_capability(0)
    assert target.arch == f"sm{major}{minor}" and target.device_name == torch.cuda.get_device_name(0)


def test_tuned_bundle_serves_hits_without_benchmarking(tmp_path: Path) -> None:
    results = tmp_path / "r.pb"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tuned_kernels",
            "tune",
            "--corpus",
            str(ROOT / "benchmarks/matmul4.py"),
            "--shapes",
            "quick",
            "-o",
            str(results),
        ],
        check=True,
        cwd=tmp_path,
    )
    program = (
        "import os, torch, tuned_kernels; tuned_kernels.enable()\n"
        "from tuned_kernels import ops\n"
        "a = torch.randn(16, 4096, device='cuda', dtype=torch.float16)\n"
        "b = torch.randn(4096, 4096, device='cuda', dtype=torch.float16)\n"
        "c = ops.matmul(a, b); torch.cuda.synchronize()\n"
        "ref = a.float() @ b.float(); assert ((c.float() - ref).abs().max() / ref.abs().max()) < 1e-2\n"
        "s = tuned_kernels.stats(); print(s['hits'], s['misses'], s['configs_benchmarked'])\n"
    )
    env = {
        "TUNED_KERNELS_PATH": str(results),
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay"),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": __import__("os").environ.get("PYTHONPATH", ""),
    }
    out = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode == 0 and out.stdout.split() == ["1", "0", "0"], out.stdout + out.stderr
