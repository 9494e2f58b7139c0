"""`tune-misses`: run the user's program with every key no bundle holds tuned where it is met (the keys
served a predicted config before included), into this user's overlay, and with -o into a results file."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from tuned_kernels.cli.capturing import keys_in, program_argument, program_to_run, run_reporting
from tuned_kernels.cli.parsing import command, json_option


def add_commands(sub: Any) -> None:
    p = command(
        sub,
        "tune-misses",
        "run a program and tune every key no bundle holds, predicted ones included",
        "Runs COMMAND with serving on and each key that no bundle holds tuned where the program meets it\n"
        "(TUNED_KERNELS_ON_MISS=tune), the keys earlier runs were served a predicted config for included,\n"
        "into this user's overlay: the next run hits them. -o also writes what was tuned to FILE, a results\n"
        "file to merge into a bundle. Exits with the program's status.",
        "  tuned-kernels tune-misses -- python app.py\n"
        "  tuned-kernels tune-misses -o app-misses.pb.zst -- python app.py",
        cmd_tune_misses,
    )
    p.add_argument("-o", "--output", metavar="FILE", help="also write the entries tuned to this results file")
    json_option(p, "what was tuned")
    program_argument(p)


def cmd_tune_misses(args: argparse.Namespace) -> int:
    command_line = program_to_run(args.command_line, "python app.py")
    if args.output:
        from tuned_kernels.results.formats import format_for

        format_for(args.output)  # a bad extension fails before the program runs
    with tempfile.TemporaryDirectory(prefix="tuned-kernels-misses-") as tmp:
        env = {**os.environ, "TUNED_KERNELS_ON_MISS": "tune"}
        returncode, lines = run_reporting(command_line, env, Path(tmp))
    tuned = keys_in(lines, "missed")
    overlays = sorted({x["overlay"] for x in lines if x.get("overlay")})
    written = _write_tuned(Path(args.output), overlays, set(tuned)) if args.output and tuned else 0
    if args.json:
        listed = [[name, list(key)] for name, key in tuned]
        print(json.dumps({"tuned": listed, "overlays": overlays, "output": args.output, "written": written}))
        return returncode
    went = ", ".join(overlays) or "this process only (no overlay could be written)"
    print(f"tuned {len(tuned)} keys no bundle holds, kept in {went}", file=sys.stderr)
    for name, key in tuned:
        print(f"  tuned {name} {key}", file=sys.stderr)
    if args.output:
        print(f"wrote {written} of them to {args.output}", file=sys.stderr)
    return returncode


def _write_tuned(output: Path, overlays: list[str], tuned: set[tuple[str, tuple[Any, ...]]]) -> int:
    """The overlays' timed entries for the `tuned` (kernel, key) pairs, written to `output`."""
    from tuned_kernels import model
    from tuned_kernels.results import read_results, write_results
    from tuned_kernels.results.merge import join

    parts = []
    for path in overlays:
        held = read_results(path)
        picked = tuple(
            e
            for e in held.entries
            if (e.kernel.name, tuple(e.key)) in tuned and e.found_by is not model.FoundBy.PREDICTED
        )
        parts.append(held.with_entries(picked))
    if not parts:
        return 0
    joined = join(parts[0].header, parts)
    write_results(output, joined)
    return len(joined.entries)
