"""The `tuned-kernels` command: parses arguments and calls one function per command.

Errors of ours become one line on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from tuned_kernels.errors import TunedKernelsError, one_line
from tuned_kernels.timestamps import utc_now


def cmd_detect(args: argparse.Namespace) -> int:
    from tuned_kernels.hardware import compiler_fingerprint, detect
    from tuned_kernels.naming import distribution_name

    target = detect()
    compiler = compiler_fingerprint(target)
    info = {
        **dataclasses.asdict(target),
        "bundle_name": distribution_name(target.arch),
        "compiler": {
            **dataclasses.asdict(compiler),
            "backend_versions": dict(compiler.backend_versions),
            "compiler_id": compiler.compiler_id,
        },
    }
    if args.expect and target.arch != args.expect.strip().lower().replace("_", ""):
        print(
            f"tuned-kernels detect: expected {args.expect}, this machine is {target.arch} "
            f"({target.device_name or 'no GPU'}): the runner's label is wrong",
            file=sys.stderr,
        )
        return 1
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(f"vendor       {target.vendor}")
        print(f"arch         {target.arch}")
        print(f"device       {target.device_name or '-'} ({target.multiprocessor_count} multiprocessors)")
        print(f"compiler     {compiler.describe()}, torch {compiler.torch_version}")
        print(f"triton hash  {compiler.triton_hash[:16]}")
        print(f"bundle       {distribution_name(target.arch)}")
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
    carried = ""
    if args.carry_over:
        from tuned_kernels.aot.carry_over import identities_in
        from tuned_kernels.results.merge import carry_over

        merged, moved = carry_over(merged, identities_in(args.carry_over))
        carried = f" ({moved} carried over to identity by source)"
    write_results(args.output, merged)
    print(f"merged {len(inputs)} files, {len(merged.entries)} entries{carried} -> {args.output}")
    return 0


def _shard(text: str) -> tuple[int, int]:
    from tuned_kernels.aot.corpus import parse_shard

    try:
        return parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_tune(args: argparse.Namespace) -> int:
    from tuned_kernels.aot.tune_command import TuneRequest, run_tune
    from tuned_kernels.aot.tuner import TuneOptions

    options = TuneOptions(
        strategy=args.strategy,
        shard=args.shard,
        time_budget_s=args.time_budget,
        jobs=args.jobs,
        artifacts=args.artifacts,
    )
    request = TuneRequest(
        output=args.output,
        corpus=args.corpus,
        shapes=args.shapes,
        kernels=args.kernels or (),
        resume=args.resume,
        seed_files=args.seed_from or (),
        options=options,
    )
    report = run_tune(request, utc_now())
    summary = {**dataclasses.asdict(report), "output": args.output}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"tuned {report.tuned} keys ({report.resumed} done earlier"
            + (f", {report.other_kernel} for another kernel here" if report.other_kernel else "")
            + f") in {report.seconds:.1f}s: "
            f"{report.configs_benchmarked} configs benchmarked, {report.rejected} rejected -> {args.output}"
            + (" (stopped at the time budget)" if report.stopped_early else "")
        )
        if report.artifact_note:
            print(f"  artifacts: {report.artifact_note}")
        for failure in report.failed:
            print(f"  failed: {failure}")
    return 1 if report.failed else 0


def cmd_compile(args: argparse.Namespace) -> int:
    from tuned_kernels.aot.compile_command import compile_results
    from tuned_kernels.aot.corpus_loader import load_corpus
    from tuned_kernels.results import read_results, write_results

    results = read_results(args.results)
    compiled, report = compile_results(results, args.target, load_corpus(args.corpus))
    write_results(args.output, compiled)
    print(
        f"compiled {report.compiled} kernels for {args.target} ({report.bytes} bytes), "
        f"{report.kept} already compiled, {len(report.skipped)} skipped -> {args.output}"
    )
    for reason in report.skipped:
        print(f"  skipped: {reason}")
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    from tuned_kernels.aot.capture import capture

    command = args.command_line[1:] if args.command_line[:1] == ["--"] else args.command_line
    report = capture(args.output, command)
    if not report.written:
        said = (
            f"the program exited with {report.returncode} and recorded nothing; {args.output} left as it was"
        )
    elif report.entries == 0:
        said = f"captured 0 tuning decisions (the program ran no autotuned kernel) -> {args.output}, empty"
    else:
        said = f"captured {report.entries} tuning decisions of {len(report.kernels)} kernels -> {args.output}"
        said += f" ({', '.join(report.kernels)})"
    print(said, file=sys.stderr)
    return report.returncode


def cmd_status(args: argparse.Namespace) -> int:
    import tuned_kernels

    summary = tuned_kernels.stats()
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"target     {summary['target']}, {summary['compiler']}")
    for chosen in summary["selected"]:
        entries = summary["bundle_entries"].get(chosen["file"], 0)
        print(f"selected   {chosen['bundle']}  ({chosen['file']}): {entries} entries")
    for rejected in summary["rejected"]:
        print(f"rejected   {rejected['bundle']}: {rejected['reason']}")
    if not summary["selected"] and not summary["rejected"]:
        print("bundles    none found (install tuned-kernels-<target> or set TUNED_KERNELS_PATH)")
    print(f"entries    {summary['entries']}")
    overlay = summary["overlay"]
    print(f"overlay    {overlay['path']} ({overlay['bytes']} bytes)")
    for kernel, count in overlay["entries_per_kernel"].items():
        print(f"  tuned    {kernel}: {count} keys")
    for problem in summary["problems"]:
        print(f"problem    {problem}")
    return 0


def cmd_coverage(args: argparse.Namespace) -> int:
    import subprocess
    import tempfile
    from pathlib import Path

    command = args.command_line[1:] if args.command_line[:1] == ["--"] else args.command_line
    if not command:
        raise TunedKernelsError("coverage: give the program to run after --, e.g. -- pytest tests/")
    with tempfile.TemporaryDirectory(prefix="tuned-kernels-coverage-") as tmp:
        report = Path(tmp) / "report.jsonl"
        paths = [str(Path(args.results).resolve())]
        env = {**os.environ, "TUNED_KERNELS": "1", "TUNED_KERNELS_REPORT": str(report)}
        env["TUNED_KERNELS_PATH"] = os.pathsep.join([*paths, os.environ.get("TUNED_KERNELS_PATH", "")]).strip(
            os.pathsep
        )
        returncode = subprocess.call(command, env=env)
        lines = [json.loads(x) for x in report.read_text().splitlines()] if report.exists() else []
    hits = sum(x["hits"] for x in lines)
    missed = sorted({(name, tuple(key)) for x in lines for name, key in x["missed"]}, key=repr)
    if args.json:
        print(json.dumps({"hits": hits, "misses": len(missed), "missed": [[n, list(k)] for n, k in missed]}))
    else:
        print(f"coverage: {hits} hits, {len(missed)} distinct keys missed in {len(lines)} processes")
        for name, key in missed:
            print(f"  missed {name} {key}")
    return returncode


def cmd_newer_compilers(args: argparse.Namespace) -> int:

    from tuned_kernels.packager.releases import newer_releases, pypi_releases
    from tuned_kernels.results import open_results
    from tuned_kernels.results.locate import results_files_given

    paths = results_files_given(args.results)
    if not paths:
        raise TunedKernelsError(f"no results files in {' '.join(args.results)}: nothing to compare")
    bundled = [open_results(p).header.compiler.triton_version for p in paths]
    newer = newer_releases(bundled, pypi_releases(args.releases), include_pre=args.pre)
    print(json.dumps(newer) if args.json else "\n".join(newer))
    return 0


def cmd_build_wheel(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tuned_kernels.packager.wheel import build_wheels

    for path in build_wheels(args.results, Path(args.output), args.version, args.name):
        print(f"built {path} ({path.stat().st_size} bytes)")
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tuned_kernels.packager.index import write_index

    projects = write_index(Path(args.dist), Path(args.output))
    print(f"indexed {', '.join(projects)} -> {args.output}/ (serve it; pip install --index-url URL/ NAME)")
    return 0


def _add_inspection_commands(sub: Any) -> None:
    """What is here: the machine, results files, this process's bundles."""
    p = sub.add_parser("detect", help="show this machine's target and compiler fingerprint")
    p.add_argument("--json", action="store_true")
    p.add_argument("--expect", metavar="ARCH", help="fail unless this machine is ARCH (CI runner check)")
    p.set_defaults(func=cmd_detect)

    p = sub.add_parser("inspect", help="show a results file: kernels, keys, best configs, target, compiler")
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("merge", help="join results files (e.g. shards); the faster entry wins per key")
    p.add_argument("inputs", nargs="+")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--allow-mixed", action="store_true", help="merge files of different targets or compilers")
    p.add_argument(
        "--carry-over",
        action="append",
        default=[],
        metavar="MODULE",
        help="move entries of files made before identity by source to the kernels MODULE defines, as they are "
        "identified now, so they survive edits above the kernels (repeatable; run where MODULE imports)",
    )
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("status", help="bundles found, selected, rejected; overlay; hits and misses")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)


def _add_tuning_commands(sub: Any) -> None:
    """Producing results: tuning a corpus, capturing a program, compiling for a target."""
    p = sub.add_parser("tune", help="tune a kernel corpus on this machine's target")
    p.add_argument(
        "--corpus", default="builtin", help="builtin, package.module:NAME or path/to/file.py[:NAME]"
    )
    p.add_argument("--shapes", default="quick", help="shape set: quick (CPU/CI) or full (GPU runners)")
    p.add_argument("--kernels", action="append", help="only these families (repeatable)")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--shard", type=_shard, default=(0, 1), metavar="I/N")
    p.add_argument("--resume", action="store_true", help="keep the output's finished keys, tune the rest")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compile threads (GPU targets)")
    p.add_argument("--time-budget", type=float, default=None, metavar="SECONDS")
    p.add_argument("--strategy", choices=("exhaustive", "seeded"), default="exhaustive")
    p.add_argument("--seed-from", action="append", metavar="RESULTS", help="earlier results to seed from")
    p.add_argument(
        "--artifacts",
        choices=("none", "winners", "all"),
        default="winners",
        help="keep the compiled kernels of each key's winner (default), of every valid config, or none",
    )
    p.add_argument("--json", action="store_true", help="print a JSON summary at the end")
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("compile", help="compile a results file's winners for a GPU target, on any machine")
    p.add_argument("results")
    p.add_argument("--target", required=True, help="sm80, sm90, sm90a, sm100, gfx90a, gfx942 ...")
    p.add_argument("--corpus", default="builtin", help="the corpus whose cases launch the entries' keys")
    p.add_argument("-o", "--output", required=True)
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("capture", help="run a program and record its autotuning decisions")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("command_line", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")
    p.set_defaults(func=cmd_capture)

    p = sub.add_parser("coverage", help="run a program with these results; list every key that missed")
    p.add_argument("results", help="a results file, bundle, or directory of them")
    p.add_argument("--json", action="store_true")
    p.add_argument("command_line", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")
    p.set_defaults(func=cmd_coverage)


def _add_packaging_commands(sub: Any) -> None:
    """Shipping results: wheels, indexes, compiler bumps."""
    p = sub.add_parser("build-wheel", help="bundle results into one wheel per target: NAME-<arch>")
    p.add_argument("results", nargs="+")
    p.add_argument("-o", "--output", default="dist")
    p.add_argument("--name", default="tuned-kernels", help="the publisher's name: wheels are NAME-<arch>")
    p.add_argument("--version", default="0.1.0", help="the bundle wheel's version (PEP 440)")
    p.set_defaults(func=cmd_build_wheel)

    p = sub.add_parser("index", help="write a PEP 503 simple index of the wheels in a directory")
    p.add_argument("dist")
    p.add_argument("-o", "--output", default="simple")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("newer-compilers", help="Triton releases newer than every given bundle's compiler")
    p.add_argument("results", nargs="+", help="results files, bundles or directories holding them")
    p.add_argument("--releases", default="https://pypi.org/pypi/{name}/json", help="PyPI JSON URL or file")
    p.add_argument("--pre", action="store_true", help="include pre-releases")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_newer_compilers)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tuned-kernels", description=__doc__.splitlines()[0] if __doc__ else ""
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_inspection_commands(sub)
    _add_tuning_commands(sub)
    _add_packaging_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in ("tune", "capture", "status"):
        from tuned_kernels.hardware.probe import interpret_without_gpu

        interpret_without_gpu()
    try:
        code: int = args.func(args)
        return code
    except TunedKernelsError as exc:
        print(f"tuned-kernels {args.command}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a path that is a directory, read-only, missing, /proc ...
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"tuned-kernels {args.command}: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except (ValueError, LookupError, TypeError) as exc:  # bad input that reached a library: still one line
        print(f"tuned-kernels {args.command}: {one_line(f'{type(exc).__name__}: {exc}')}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"tuned-kernels {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `tuned-kernels inspect FILE | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
