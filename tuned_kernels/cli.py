"""The `tuned-kernels` command: parses arguments and calls one function per command.

Errors of ours become one line on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from datetime import datetime, timezone

from tuned_kernels.errors import TunedKernelsError


def utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def cmd_detect(args: argparse.Namespace) -> int:
    from tuned_kernels.hardware import compiler_fingerprint, detect

    target = detect()
    compiler = compiler_fingerprint(target)
    info = {
        **dataclasses.asdict(target),
        "bundle_name": target.bundle_name,
        "compiler": {
            **dataclasses.asdict(compiler),
            "backend_versions": dict(compiler.backend_versions),
            "compiler_id": compiler.compiler_id,
        },
    }
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(f"vendor       {target.vendor}")
        print(f"arch         {target.arch}")
        print(f"device       {target.device_name or '-'} ({target.multiprocessor_count} multiprocessors)")
        print(f"compiler     {compiler.describe()}, torch {compiler.torch_version}")
        print(f"triton hash  {compiler.triton_hash[:16]}")
        print(f"bundle       {target.bundle_name}")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from tuned_kernels.results import read_results
    from tuned_kernels.results.report import results_summary, results_table

    results = read_results(args.file)
    print(json.dumps(results_summary(results), indent=2) if args.json else results_table(results))
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from tuned_kernels.results import merge_results, read_results, write_results
    from tuned_kernels.version import TOOL_VERSION

    inputs = [(path, read_results(path)) for path in args.inputs]
    merged = merge_results(
        inputs, allow_mixed=args.allow_mixed, created_at=utc_now(), tool_version=TOOL_VERSION
    )
    write_results(args.output, merged)
    print(f"merged {len(inputs)} files, {len(merged.entries)} entries -> {args.output}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tuned-kernels", description=__doc__.splitlines()[0] if __doc__ else ""
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("detect", help="show this machine's target and compiler fingerprint")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_detect)

    p = sub.add_parser("inspect", help="show a results file: kernels, keys, best configs, target, compiler")
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("merge", help="join results files (e.g. shards); the faster entry wins per key")
    p.add_argument("inputs", nargs="+")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--allow-mixed", action="store_true", help="merge files of different targets or compilers")
    p.set_defaults(func=cmd_merge)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except TunedKernelsError as exc:
        print(f"tuned-kernels {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"tuned-kernels {args.command}: interrupted", file=sys.stderr)
        return 130
