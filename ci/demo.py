"""`make demo`: the whole loop on this machine's target (the cpu target through Triton's interpreter when
there is no GPU): tune -> build-wheel -> index (the tool's wheel beside the bundle) -> serve on 127.0.0.1 ->
pip install -> run with hits, then a new shape that is tuned once into the overlay and hit by the next
process."""

from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

PROGRAM = """
import json, sys, torch, tuned_kernels
from tuned_kernels import ops
torch.manual_seed(0)
m = int(sys.argv[1])
a, b = torch.randn(m, 64, dtype=torch.float16), torch.randn(64, 80, dtype=torch.float16)
x = torch.randn(4, 1000, dtype=torch.float16)
assert ((ops.matmul(a, b).double() - a.double() @ b.double()).abs().max() < 0.05)
assert ((ops.softmax(x).double() - torch.softmax(x.double(), -1)).abs().max() < 1e-3)
s = tuned_kernels.stats()
shown = {k: s[k] for k in ("hits", "misses", "configs_benchmarked")}
print(json.dumps({**shown, "bundle": [b["bundle"] for b in s["selected"]]}))
"""


ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, env: dict[str, str] | None = None) -> None:
    print(f"\n$ tuned-kernels {' '.join(args)}", flush=True)
    subprocess.run([sys.executable, "-m", "tuned_kernels", *args], check=True, env=env, timeout=1800)


def shell(*args: str) -> None:
    """A command as a user types it (pip ...), run with this environment's Python."""
    print(
        f"\n$ {' '.join(a if '/' not in a or a.startswith('http') else '…/' + Path(a).name for a in args)}",
        flush=True,
    )
    subprocess.run([sys.executable, "-m", *args], check=True, timeout=600, cwd=ROOT)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # pip's requests need no log here
        pass


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="tuned-kernels-demo-"))
    env = {**os.environ, "TUNED_KERNELS_CACHE_DIR": str(work / "overlay")}
    results = str(work / "results.pb.zst")
    cli("detect")
    cli(
        "tune",
        "--shapes",
        "quick",
        "--kernels",
        "matmul",
        "--kernels",
        "matmul_skinny",
        "--kernels",
        "matmul_impl",
        "--kernels",
        "softmax",
        "-o",
        results,
    )
    cli("inspect", results)
    cli("build-wheel", results, "-o", str(work / "dist"))
    # the tool's own wheel beside the bundles, so the index has everything a bundle needs
    shell("pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(work / "dist"), ".")
    cli("index", str(work / "dist"), "-o", str(work / "simple"))

    handler = functools.partial(QuietHandler, directory=str(work))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/simple/"
    detected = subprocess.run(
        [sys.executable, "-m", "tuned_kernels", "detect", "--json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    arch = json.loads(detected.stdout)["arch"]
    try:
        shell("pip", "install", "-q", "--extra-index-url", url, f"tuned-kernels-{arch}")
        run_env = {**env, "TUNED_KERNELS": "1"}
        for m, why in (
            (96, "a tuned shape: served by the bundle"),
            (48, "a new shape: tuned once, into the overlay"),
            (48, "the same new shape, next process: served by the overlay"),
        ):
            print(f"\n$ TUNED_KERNELS=1 python app.py {m}    # {why}", flush=True)
            subprocess.run([sys.executable, "-c", PROGRAM, str(m)], check=True, env=run_env, timeout=600)
        cli("status", env=run_env)
    finally:
        server.shutdown()
        subprocess.run(
            [sys.executable, "-m", "pip", "uninstall", "-q", "-y", f"tuned-kernels-{arch}"],
            check=True,
            timeout=300,
        )
    print(f"\nEverything the demo wrote is under {work}")


if __name__ == "__main__":
    main()
