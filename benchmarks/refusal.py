"""What refusing a hostile results file costs, before any work: the CPU time and the memory a fresh process
spends reading each bomb below until it is refused. Each is small on disk and would cost far more to parse:

- `tiny-fields`: 1.5 KB of zstd that decompresses to 16 MiB of 8 million empty entries (the parse-cost walk
  used to visit every one: 13.6 s of CPU);
- `skippable-frame`: the same behind a 1 MiB skippable zstd frame, which raises the file's budget (was 52 s);
- `escaped-text`: 282 bytes of text that decompress to 8 MiB of one quoted string of control characters,
  quoted back in the parser's error (escaped whole before it was cut: 700 MB).

CPU only: `python benchmarks/refusal.py [--json OUT]`."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import zstandard

GOAL_CPU_S, GOAL_MB = 0.5, 100
SKIPPABLE_MAGIC = 0x184D2A50


def _entries_bomb(path: Path, entries: int, skippable: int = 0) -> None:
    from tuned_kernels.results import results_pb2 as pb

    payload = b"\x1a\x00" * entries  # Results.entries, each empty
    envelope = pb.ResultsEnvelope(
        format="tuned-kernels-results",
        schema_version=2,
        payload=payload,
        sha256=hashlib.sha256(payload).digest(),
    )
    data = zstandard.ZstdCompressor(level=19, write_content_size=True).compress(envelope.SerializeToString())
    if skippable:
        data = (
            SKIPPABLE_MAGIC.to_bytes(4, "little") + skippable.to_bytes(4, "little") + bytes(skippable) + data
        )
    path.write_bytes(data)


def _text_bomb(path: Path) -> None:
    text = b'format: "' + b"\x1b" * ((8 << 20) - 20)
    path.write_bytes(zstandard.ZstdCompressor(level=19, write_content_size=True).compress(text))


BOMBS: dict[str, tuple[str, Callable[[Path], None]]] = {
    "tiny-fields": ("tiny.pb.zst", lambda p: _entries_bomb(p, 8 << 20)),
    "skippable-frame": ("framed.pb.zst", lambda p: _entries_bomb(p, 23 << 20, skippable=1 << 20)),
    "escaped-text": ("escaped.txt.zst", _text_bomb),
}

CHILD = """
import json, resource, sys, time
from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.results.files import open_results
def status_kb(field):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(field + ":"))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak starts again from now: the imports' own peak is not the reading's
rss, before = status_kb("VmRSS"), resource.getrusage(resource.RUSAGE_SELF)
try:
    open_results(sys.argv[1])
    refused = None
except TunedKernelsError as exc:
    refused = str(exc)
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
growth = max(0, status_kb("VmHWM") - rss) // 1024
print(json.dumps({"refused": refused, "cpu_s": round(cpu, 3), "peak_growth_mb": growth}))
"""


def refuse(path: Path) -> dict[str, object]:
    """Reads `path` in a fresh process: whether it was refused (and why), its CPU seconds and peak memory."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=300, check=True
    )
    return dict(json.loads(done.stdout.splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, (file_name, build) in BOMBS.items():
            path = Path(folder, file_name)
            build(path)
            rows[name] = {"bytes_on_disk": path.stat().st_size, **refuse(path)}
    print("| bomb | bytes on disk | CPU to refuse | memory | goal | met |\n|---|---|---|---|---|---|")
    for name, row in rows.items():
        met = row["refused"] is not None and row["cpu_s"] <= GOAL_CPU_S and row["peak_growth_mb"] <= GOAL_MB
        print(
            f"| {name} | {row['bytes_on_disk']:,} | {row['cpu_s']} s | {row['peak_growth_mb']} MB | "
            f"refused, ≤ {GOAL_CPU_S} s, ≤ {GOAL_MB} MB | {'yes' if met else 'NO'} |"
        )
    if args.json:
        report = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "rows": rows}
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
