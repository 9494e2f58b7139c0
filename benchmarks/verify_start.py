"""What checking a signature adds to a start: the installed bundles opened (`open_installed`, what serving
does first) in fresh processes, for a bundle of 100,000 entries and 1,000 compiled kernels of 32 KiB each,
unsigned with no trusted keys set, against signed with TUNED_KERNELS_TRUSTED_KEYS naming its key. The
difference is hashing the bytes read and one Ed25519 verification.

CPU only: `python benchmarks/verify_start.py [--json OUT]`."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENTRIES, KERNELS, KERNEL_BYTES, REPEATS = 100_000, 1_000, 32 << 10, 7
GOAL_MS = 50.0
CHILD = (
    "import time; t = time.perf_counter()\n"
    "from tuned_kernels.results.discovery import open_installed\n"
    "opened = open_installed(); assert len(opened.views) == 1 and not opened.problems, opened.problems\n"
    "print((time.perf_counter() - t) * 1000)\n"
)


def bundle(path: Path) -> None:
    from tuned_kernels.hardware import compiler_fingerprint, detect

    from tuned_kernels import model
    from tuned_kernels.results import write_results

    target = detect()
    header = model.Header(
        target, compiler_fingerprint(target), model.Producer.TUNE, "bench", "2026-01-01T00:00:00Z"
    )
    kernel = model.KernelIdentity("bench.kernel", "0" * 64)
    config = model.Config.of({"BLOCK": 64}, num_warps=4)
    blobs: dict[str, bytes] = {}
    rows = []
    for i in range(ENTRIES):
        artifacts = ()
        if i < KERNELS:
            data = os.urandom(KERNEL_BYTES)  # machine code compresses little
            sha = hashlib.sha256(data).hexdigest()
            blobs[sha] = data
            files = (model.ArtifactFile("k.cubin", sha, len(data)),)
            artifacts = (model.Artifact(sha, "cuda:90:32", files, config),)
        rows.append(
            model.Entry(
                kernel, (i, "torch.float16"), config, (model.Timing(config, 0.01),), artifacts=artifacts
            )
        )
    write_results(path, model.Results(header, tuple(rows), blobs))


def starts(path: Path, **env: str) -> list[float]:
    environ = {**os.environ, "TUNED_KERNELS_PATH": str(path), **env}
    environ.pop("TUNED_KERNELS_LOCK", None)
    return [
        float(subprocess.run([sys.executable, "-c", CHILD], env=environ, capture_output=True, text=True,
                             timeout=300, check=True).stdout.strip().splitlines()[-1])
        for _ in range(REPEATS)
    ]  # fmt: skip


def main() -> None:
    from tuned_kernels.results.digests import digest_of
    from tuned_kernels.signing import SUFFIX, new_key_pair, sign

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        unsigned, signed = Path(folder, "plain", "b.pb.zst"), Path(folder, "signed", "b.pb.zst")
        unsigned.parent.mkdir(mode=0o700)
        signed.parent.mkdir(mode=0o700)
        bundle(unsigned)
        signed.write_bytes(unsigned.read_bytes())
        private, public = new_key_pair()
        Path(f"{signed}{SUFFIX}").write_text(sign(signed.name, *digest_of(signed), private).to_json())
        plain_ms, signed_ms = [], []
        for _ in range(2):  # alternating halves, so drifts of the machine fall on both alike
            plain_ms += starts(unsigned)
            signed_ms += starts(signed, TUNED_KERNELS_TRUSTED_KEYS=public)
        size = signed.stat().st_size
    plain, checked = statistics.median(plain_ms), statistics.median(signed_ms)
    print(
        "| bundle | open, unsigned | open, signed and checked | added | goal | met |\n|---|---|---|---|---|---|"
    )
    print(
        f"| {ENTRIES:,} entries, {KERNELS:,} compiled kernels ({size / 2**20:.1f} MiB) | {plain:.1f} ms | "
        f"{checked:.1f} ms | {checked - plain:.1f} ms | ≤ {GOAL_MS:.0f} ms | "
        f"{'yes' if checked - plain <= GOAL_MS else 'NO'} |"
    )
    if args.json:
        report = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "bytes": size,
                  "unsigned_ms": plain_ms, "signed_ms": signed_ms}  # fmt: skip
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
