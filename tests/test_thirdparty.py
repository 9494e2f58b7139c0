"""Real programs: autotuned kernels from kernel libraries on PyPI (pinned in the dev extras), captured with
`tuned-kernels capture` and served to a fresh process with no benchmarking, outputs checked by the program.
Under the interpreter here; tests/test_gpu.py does the same on a GPU, counting compilations too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TK = [sys.executable, "-m", "tuned_kernels"]


def test_fla_rms_norm_is_captured_then_served_without_benchmarking(tmp_path: Path) -> None:
    """fla-core's norm kernel: its own Autotuner subclass, all-keyword launches."""
    app = [sys.executable, str(ROOT / "tests/corpora/fla_norm_app.py"), "cpu"]
    env = {**os.environ, "TRITON_INTERPRET": "1", "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay")}
    bundle = tmp_path / "fla.pb.zst"
    captured = subprocess.run(
        [*TK, "capture", "-o", str(bundle), "--", *app], env=env, capture_output=True, text=True, timeout=600
    )
    assert captured.returncode == 0 and "layer_norm_fwd_kernel" in captured.stderr, captured.stderr[-2000:]
    served = subprocess.run(
        [*TK, "coverage", "--json", str(bundle), "--", *app],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert served.returncode == 0, served.stderr[-2000:]  # the program checked its output against PyTorch
    no_graphs = {"hits": 0, "misses": 0, "frames": 0}  # no torch.compile in the program
    assert json.loads(served.stdout.splitlines()[-1]) == {
        "hits": 1,
        "misses": 0,
        "missed": [],
        "predicted": [],
        "graphs": no_graphs,
    }
