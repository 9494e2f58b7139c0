"""Running the user's program: `capture` records its tuning, `coverage` lists what it missed."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

from tuned_kernels.cli.parsing import command, json_option
from tuned_kernels.errors import TunedKernelsError


def add_capture(sub: Any) -> None:
    p = command(
        sub,
        "capture",
        "run a program and record every autotuning decision it makes",
        "Runs COMMAND unchanged and records each tuning decision of its @triton.autotune kernels (and\n"
        "torch.compile max-autotune's GEMM choices and kernel configs) into -o, with the compiled\n"
        "kernels on a GPU, replacing what -o held (--merge keeps it). A program that records nothing\n"
        "leaves an empty file; one that fails recording nothing leaves -o as it was; one stopped with\n"
        "Ctrl-C keeps what it recorded. Exits with the program's status.",
        "  tuned-kernels capture -o app.pb.zst -- python app.py\n"
        "  tuned-kernels capture -o suite.pb.zst -- pytest -x tests/",
        cmd_capture,
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the results file to write")
    p.add_argument(
        "--merge",
        action="store_true",
        help="keep what -o already holds beside what this run records (the faster winner of a key)",
    )
    json_option(p, "what was captured")
    program_argument(p)


def cmd_capture(args: argparse.Namespace) -> int:
    from tuned_kernels.aot.capture import capture

    command = program(args.command_line)
    report = capture(args.output, command, merge=args.merge)
    if not report.written:
        said = (
            f"the program exited with {report.returncode} and recorded nothing; {args.output} left as it was"
        )
    elif report.entries == 0 and not report.graphs:
        said = f"captured 0 tuning decisions (the program ran no autotuned kernel) -> {args.output}, empty"
    elif report.entries == 0:
        said = f"captured torch.compile's compiled graphs -> {args.output}: {report.graphs}"
    else:
        said = f"captured {report.entries} tuning decisions of {len(report.kernels)} kernels -> {args.output}"
        said += f" ({', '.join(report.kernels)})"
        said += f"\nand torch.compile's compiled graphs: {report.graphs}" if report.graphs else ""
    if report.replaced:
        said += f"\n(replacing the {report.replaced} entries it held; --merge keeps them)"
    elif report.kept:
        said += f"\n(merged with the {report.kept} entries it held)"  # the file's entries: `inspect` tells
    print(said, file=sys.stderr)
    if args.json:
        print(json.dumps({**dataclasses.asdict(report), "output": args.output}))
    return report.returncode


def add_coverage(sub: Any) -> None:
    p = command(
        sub,
        "coverage",
        "run a program with these results and list every key that missed",
        "Runs COMMAND (your test suite, a benchmark) serving from RESULTS only, then lists each kernel\n"
        "key no bundle held: what to capture or tune next. Exits with the program's status.",
        "  tuned-kernels coverage app.pb.zst -- pytest tests/",
        cmd_coverage,
    )
    p.add_argument("results", help="a results file, bundle, or folder of them")
    json_option(p, "hits and misses")
    program_argument(p)


def cmd_coverage(args: argparse.Namespace) -> int:
    import tempfile

    command = program_to_run(args.command_line, "pytest tests/")
    if not Path(args.results).exists():  # a folder with no results in it yet: every key misses
        raise TunedKernelsError(f"{args.results}: no such results file or folder")
    with tempfile.TemporaryDirectory(prefix="tuned-kernels-coverage-") as tmp:
        paths = [str(Path(args.results).resolve())]
        # an empty Inductor cache: a graph found there then came from the results
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(Path(tmp) / "inductor")}
        env["TUNED_KERNELS_PATH"] = os.pathsep.join([*paths, os.environ.get("TUNED_KERNELS_PATH", "")]).strip(
            os.pathsep
        )
        returncode, lines = run_reporting(command, env, Path(tmp))
    hits = sum(x["hits"] for x in lines)
    missed, predicted = (keys_in(lines, kind) for kind in ("missed", "predicted"))
    graphs = {k: sum(x.get(f"graph_{k}", 0) for x in lines) for k in ("hits", "misses", "frames")}
    if args.json:
        listed = {
            kind: [[n, list(k)] for n, k in keys]
            for kind, keys in (("missed", missed), ("predicted", predicted))
        }
        print(json.dumps({"hits": hits, "misses": len(missed), **listed, "graphs": graphs}))
    else:
        guessed = f", {len(predicted)} distinct keys predicted" if predicted else ""
        print(f"coverage: {hits} hits{guessed}, {len(missed)} distinct keys missed in {len(lines)} processes")
        if any(graphs.values()):
            print(
                f"  torch.compile graphs: {graphs['hits']} served"
                + (f", {graphs['frames']} Dynamo frames loaded with theirs" if graphs["frames"] else "")
                + f", {graphs['misses']} compiled"
            )
        for name, key in predicted:
            print(f"  predicted {name} {key}")
        for name, key in missed:
            print(f"  missed {name} {key}")
    return returncode


def keys_in(lines: list[dict[str, Any]], kind: str) -> list[tuple[str, tuple[Any, ...]]]:
    """The distinct (kernel, key) pairs the processes' report lines list under `kind`, in the order met."""
    return list(dict.fromkeys((name, tuple(key)) for x in lines for name, key in x.get(kind, [])))


def add_commands(sub: Any) -> None:
    add_capture(sub)
    add_coverage(sub)


def program_argument(p: argparse.ArgumentParser) -> None:
    """COMMAND, the program a command runs, given after `--`."""
    p.add_argument(
        "command_line", nargs=argparse.REMAINDER, metavar="-- COMMAND ...", help="the program to run"
    )


def program_to_run(command_line: list[str], example: str) -> list[str]:
    """The program given after `--`; refused in one line when none was."""
    command = program(command_line)
    if not command:
        raise TunedKernelsError(f"give the program to run after --, e.g. -- {example}")
    return command


def run_reporting(command: list[str], env: dict[str, str], tmp: Path) -> tuple[int, list[dict[str, Any]]]:
    """Runs `command` with serving on, each of its processes appending its hits, predictions, misses and
    overlay to a report in `tmp` (TUNED_KERNELS_REPORT): its exit status, and the report's lines."""
    import subprocess

    report = tmp / "report.jsonl"
    returncode = subprocess.call(
        command, env={**env, "TUNED_KERNELS": "1", "TUNED_KERNELS_REPORT": str(report)}
    )
    lines = [json.loads(x) for x in report.read_text().splitlines()] if report.exists() else []
    return returncode, lines


def program(command_line: list[str]) -> list[str]:
    """The program to run, as given after `--` (argparse keeps the `--` in a REMAINDER)."""
    return command_line[1:] if command_line[:1] == ["--"] else command_line
