"""Why tuned-kernels does not skip Dynamo's tracing with torch's own precompile: a frame Dynamo saves with
Dynamo's `caching_precompile` setting keeps no guard on the identity of the program's globals (nor on
closures, weak references or dict versions), so a saved frame runs where such a global differs.

A module whose forward calls a global `ACT` is compiled once with `ACT = torch.relu` and its frame saved
(`torch.compiler.save_cache_artifacts()` at exit, as a capture would); a fresh process with only that
frame in an empty cache then runs the program with `ACT = torch.tanh`, and with `torch.relu` again.
Printed per run: Dynamo frames traced, saved frames loaded, the largest difference from eager PyTorch.

CPU, any torch with `caching_precompile`: `python benchmarks/dynamo_precompile_guards.py [--out FILE]`."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "tests" / "corpora" / "precompile_guards_app.py"


def run(cache: Path, act: str, how: str, work: Path) -> dict[str, object]:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache), "TORCH_LOGS": "-dynamo"}
    done = subprocess.run(
        [sys.executable, str(APP), act, how],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    return {"ACT": f"torch.{act}", **json.loads(done.stdout.split("RUN ", 1)[1].splitlines()[0])}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="also write the rows here, as JSON lines")
    args = parser.parse_args()
    import torch

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        captured = work / "captured"
        rows.append({"run": "capture", **run(captured, "relu", "capture", work)})
        for act in ("tanh", "relu"):
            served = work / f"served-{act}"
            served.mkdir()
            shutil.copytree(captured / "dynamo", served / "dynamo")  # the saved frame only
            rows.append({"run": "served", **run(served, act, "serve", work)})
    for row in rows:
        print(json.dumps(row))
    if args.out:
        header = {"torch": torch.__version__, "python": sys.version.split()[0]}
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in [header, *rows]))


if __name__ == "__main__":
    main()
