"""Where the test suite's CPU time goes, process by process: runs pytest as `make test` does (two workers, a
file per worker) with a `sitecustomize` that has every Python process the tests start append, at its exit,
its own CPU time (user and system, not its children's), its wall time, whether it imported torch and
Inductor, its command and the test that started it; then prints the totals by kind of process and by test
file. `--from-log FILE` prints the totals of an earlier run's log instead.

    python benchmarks/suite_processes.py --log suite-processes.jsonl   # the whole suite
    python benchmarks/suite_processes.py tests/test_build_key.py          # some of it
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SITECUSTOMIZE = """
import atexit, json, os, resource, sys, time
_started = time.time()
def _log():
    used = resource.getrusage(resource.RUSAGE_SELF)
    record = {"test": os.environ.get("PYTEST_CURRENT_TEST", "?"), "argv": sys.argv[:4],
              "wall": round(time.time() - _started, 2), "cpu": round(used.ru_utime + used.ru_stime, 2),
              "inductor": INDUCTOR in sys.modules, "torch": "torch" in sys.modules}
    try:
        with open(LOG, "a") as f:
            f.write(json.dumps(record) + "\\n")
    except OSError:
        pass
atexit.register(_log)
"""


def run(log: Path, tests: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="suite-processes-") as folder:
        from tuned_kernels.inductor_edge import COMPILER_MODULE

        site = f"LOG = {str(log)!r}\nINDUCTOR = {COMPILER_MODULE!r}\n{SITECUSTOMIZE}"
        (Path(folder) / "sitecustomize.py").write_text(site)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [folder, os.environ.get("PYTHONPATH")])),
        }
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "2",
            "--dist",
            "loadfile",
            "-p",
            "no:cacheprovider",
        ]
        command += tests
        subprocess.run(command, cwd=ROOT, env=env, check=False, timeout=3600)


def kind(record: dict[str, Any]) -> str:
    if record["inductor"]:
        return "imports Inductor"
    return "imports torch, not Inductor" if record["torch"] else "imports no torch"


def totals(records: list[dict[str, Any]]) -> str:
    lines = [f"{len(records)} Python processes, their own CPU {sum(r['cpu'] for r in records):.0f} s", ""]
    lines.append("| processes | count | own CPU s | CPU s each |")
    lines.append("|---|---|---|---|")
    by_kind: dict[str, list[float]] = collections.defaultdict(list)
    for record in records:
        by_kind[kind(record)].append(record["cpu"])
    for name, cpu in sorted(by_kind.items(), key=lambda item: -sum(item[1])):
        lines.append(f"| {name} | {len(cpu)} | {sum(cpu):.0f} | {sum(cpu) / len(cpu):.2f} |")
    lines += ["", "| test file | processes | of them torch | own CPU s |", "|---|---|---|---|"]
    by_file: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for record in records:
        test = record["test"].split("::")[0]
        by_file["(no test: pytest, its workers)" if test == "?" else test].append(record)
    for name, held in sorted(by_file.items(), key=lambda item: -sum(r["cpu"] for r in item[1]))[:20]:
        torch = sum(r["torch"] for r in held)
        lines.append(f"| {name} | {len(held)} | {torch} | {sum(r['cpu'] for r in held):.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--log", type=Path, default=Path("suite-processes.jsonl"), help="the log written")
    parser.add_argument("--from-log", type=Path, default=None, help="print an earlier run's totals")
    parser.add_argument(
        "tests", nargs="*", help="pytest's own arguments: the test files or ids (all if none)"
    )
    args = parser.parse_args()
    log = args.from_log or args.log.resolve()
    if args.from_log is None:
        log.unlink(missing_ok=True)
        run(log, args.tests)
    print(totals([json.loads(line) for line in log.read_text().splitlines() if line.strip()]))


if __name__ == "__main__":
    main()
