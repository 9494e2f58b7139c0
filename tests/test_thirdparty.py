"""Real programs: autotuned kernels from kernel libraries on PyPI (pinned in the dev extras), captured with
`tuned-kernels capture` and served to a fresh process with no benchmarking, outputs checked by the program.
Under the interpreter here; tests/test_gpu.py does the same on a GPU, counting compilations too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests import factories, forked_python

ROOT = Path(__file__).resolve().parents[1]
TK = [sys.executable, "-m", "tuned_kernels"]


def test_fla_rms_norm_is_captured_then_served_without_benchmarking(tmp_path: Path) -> None:
    """fla-core's norm kernel: its own Autotuner subclass, all-keyword launches."""
    app = [sys.executable, str(ROOT / "tests/corpora/fla_norm_app.py"), "cpu"]
    env = {**os.environ, "TRITON_INTERPRET": "1", "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay")}
    bundle = tmp_path / "fla.pb.zst"
    captured = forked_python.run(
        [*TK, "capture", "-o", str(bundle), "--", *app], env=env, capture_output=True, text=True, timeout=600
    )
    assert captured.returncode == 0 and "layer_norm_fwd_kernel" in captured.stderr, captured.stderr[-2000:]
    served = forked_python.run(
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


def test_a_hugging_face_llama_compiled_whole_is_served_its_frame_with_nothing_traced_or_compiled(
    tmp_path: Path,
) -> None:
    """transformers' Llama (pinned in the dev extras), torch.compile'd on the CPU: captured in one folder,
    served in another with empty caches, its logits the captured run's, its Dynamo frame loaded (Dynamo
    traces nothing, Inductor looks up no graph) and nothing compiled. Its forward sits behind decorators
    whose wrappers take its name (torch's pickle cannot find it by that name), and its code names a module
    Dynamo installed for it (`collections`, to build its output)."""
    app = ROOT / "tests/corpora/hf_llama_app.py"

    def run(folder: Path, *command: str, **extra: str) -> subprocess.CompletedProcess[str]:
        folder.mkdir()
        env = factories.program_environment(folder) | {"HF_HUB_OFFLINE": "1", **extra}
        # new interpreters: one forked run of 7 traced this model and missed its graph, unexplained yet
        done = subprocess.run(command, env=env, cwd=folder, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
        return done

    bundle = tmp_path / "llama.pb.zst"
    captured = run(tmp_path / "capture", *TK, "capture", "-o", str(bundle), "--", sys.executable, str(app))
    assert "1 Dynamo frame, " in captured.stderr, captured.stderr[-2000:]
    served = run(
        tmp_path / "served", sys.executable, str(app), TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle)
    )
    report = json.loads(served.stdout.split("LLAMA ", 1)[1].splitlines()[0])
    graphs = report["graphs"]
    assert report["digest"] == json.loads(captured.stdout.split("LLAMA ", 1)[1].splitlines()[0])["digest"]
    assert (graphs["frames_served"], graphs["frames_traced"]) == (1, 0), (graphs, served.stderr[-2000:])
    assert (report["fxgraph_hits"], report["fxgraph_misses"]) == (0, 0), json.dumps(report)
    assert graphs["objects_compiled"] == [], graphs
