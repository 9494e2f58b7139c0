"""The `tuned-kernels` command line: one function per command, each with its help, description and examples.

Errors of ours become one line on stderr and exit status 1 (a bad command line: status 2), never a
traceback. Commands that report something take --json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from tuned_kernels.errors import TunedKernelsError, one_line, printable
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
        if target.arch == "cpu":
            print("device       none: kernels run through Triton's interpreter")
        else:
            print(f"device       {target.device_name} ({target.multiprocessor_count} multiprocessors)")
        print(f"compiler     {compiler.describe()}, torch {compiler.torch_version}")
        print(f"triton hash  {compiler.triton_hash[:16]}")
        print(f"bundle       {distribution_name(target.arch)}")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from tuned_kernels.results.inspected import results_named
    from tuned_kernels.results.report import results_summary, results_table

    named = results_named(args.file)
    if args.json:
        shown = [{"file": where, **results_summary(results)} for where, results in named]
        print(json.dumps(shown[0] if len(shown) == 1 else shown, indent=2))
    else:
        tables = [results_table(results) for _, results in named]
        heads = [f"file      {printable(where)}\n" if len(named) > 1 else "" for where, _ in named]
        print("\n\n".join(head + table for head, table in zip(heads, tables, strict=True)))
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
        carried = f" ({moved} carried over to the kernels as identified now)"
    write_results(args.output, merged)
    if args.json:
        print(json.dumps({"inputs": len(inputs), "entries": len(merged.entries), "output": args.output}))
    else:
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
    if args.dask:
        from tuned_kernels.aot.dask_tune import run_on_dask

        report = run_on_dask(request, args.dask, utc_now(), args.dask_timeout)
    else:
        report = run_tune(request, utc_now())
    written = ", ".join(report.outputs) or args.output
    summary = {**dataclasses.asdict(report), "output": args.output}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"tuned {report.tuned} keys ({report.resumed} done earlier"
            + (f", {report.other_kernel} for another kernel here" if report.other_kernel else "")
            + f") in {report.seconds:.1f}s: "
            f"{report.configs_benchmarked} configs benchmarked, {report.rejected} rejected -> {written}"
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
    if args.json:
        print(json.dumps({**dataclasses.asdict(report), "target": args.target, "output": args.output}))
        return 0
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
    elif report.entries == 0 and not report.graphs:
        said = f"captured 0 tuning decisions (the program ran no autotuned kernel) -> {args.output}, empty"
    elif report.entries == 0:
        said = f"captured torch.compile's compiled graphs -> {args.output}: {report.graphs}"
    else:
        said = f"captured {report.entries} tuning decisions of {len(report.kernels)} kernels -> {args.output}"
        said += f" ({', '.join(report.kernels)})"
        said += f"\nand torch.compile's compiled graphs: {report.graphs}" if report.graphs else ""
    print(said, file=sys.stderr)
    if args.json:
        print(json.dumps({**dataclasses.asdict(report), "output": args.output}))
    return report.returncode


# what `status` shows of a registry's summary: the environment, not the counters of its own process
ENVIRONMENT = (
    "target",
    "compiler",
    "bundles_found",
    "selected",
    "rejected",
    "entries",
    "bundle_entries",
    "overlay",
    "problems",
)


def cmd_status(args: argparse.Namespace) -> int:
    from tuned_kernels.registry import Registry, installed_registry

    # quiet: a rejected bundle's reason is a line below, not a warning beside it
    summary = {
        k: v for k, v in (installed_registry() or Registry()).summary(quiet=True).items() if k in ENVIRONMENT
    }
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
        if not any(rejected["reason"] in problem for rejected in summary["rejected"]):  # said above
            print(f"problem    {problem}")
    return 0


def cmd_coverage(args: argparse.Namespace) -> int:
    import subprocess
    import tempfile
    from pathlib import Path

    command = args.command_line[1:] if args.command_line[:1] == ["--"] else args.command_line
    if not command:
        raise TunedKernelsError("give the program to run after --, e.g. -- pytest tests/")
    if not Path(args.results).exists():  # a folder with no results in it yet: every key misses
        raise TunedKernelsError(f"{args.results}: no such results file or folder")
    with tempfile.TemporaryDirectory(prefix="tuned-kernels-coverage-") as tmp:
        report = Path(tmp) / "report.jsonl"
        paths = [str(Path(args.results).resolve())]
        # an empty Inductor cache: a graph found there then came from the results
        inductor = str(Path(tmp) / "inductor")
        env = {**os.environ, "TUNED_KERNELS": "1", "TUNED_KERNELS_REPORT": str(report)}
        env["TORCHINDUCTOR_CACHE_DIR"] = inductor
        env["TUNED_KERNELS_PATH"] = os.pathsep.join([*paths, os.environ.get("TUNED_KERNELS_PATH", "")]).strip(
            os.pathsep
        )
        returncode = subprocess.call(command, env=env)
        lines = [json.loads(x) for x in report.read_text().splitlines()] if report.exists() else []
    hits = sum(x["hits"] for x in lines)
    missed = sorted({(name, tuple(key)) for x in lines for name, key in x["missed"]}, key=repr)
    graphs = {k: sum(x.get(f"graph_{k}", 0) for x in lines) for k in ("hits", "misses")}
    if args.json:
        listed = [[n, list(k)] for n, k in missed]
        print(json.dumps({"hits": hits, "misses": len(missed), "missed": listed, "graphs": graphs}))
    else:
        print(f"coverage: {hits} hits, {len(missed)} distinct keys missed in {len(lines)} processes")
        if graphs["hits"] or graphs["misses"]:
            print(f"  torch.compile graphs: {graphs['hits']} served, {graphs['misses']} compiled")
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


LARGE_WHEEL_BYTES = 100 << 20


def cmd_build_wheel(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tuned_kernels.packager.wheel import build_wheels

    wheels = build_wheels(args.results, Path(args.output), args.version, args.name)
    if args.json:
        print(json.dumps([{"wheel": str(p), "bytes": p.stat().st_size} for p in wheels]))
        return 0
    for path in wheels:
        size = path.stat().st_size
        print(f"built {path} ({size} bytes)")
        if size > LARGE_WHEEL_BYTES:  # PyPI's default file limit; most indexes take more, pip takes any
            print(
                f"  {path.name} is over {LARGE_WHEEL_BYTES >> 20} MB: `inspect` its results for the compiled "
                "graphs' share; tune or capture in shards, or serve the graphs from a file of their own",
                file=sys.stderr,
            )
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tuned_kernels.packager.index import write_index

    projects = write_index(Path(args.dist), Path(args.output))
    if args.json:
        print(json.dumps({"projects": projects, "output": args.output}))
    else:
        print(index_instructions(projects, Path(args.output)))
    return 0


def index_instructions(projects: list[str], output: Path) -> str:
    """What to run to serve an index folder and install from it: here, and behind a real host."""
    import shlex

    folder = shlex.quote(str(output.resolve()))
    first = projects[0] if projects else "NAME"
    return "\n".join(
        [
            f"indexed {', '.join(projects) or 'nothing'} -> {output.as_posix().rstrip('/')}/",
            "serve it here:  python -m http.server 8000 --bind 127.0.0.1 --directory " + folder,
            f"install from it:  pip install --extra-index-url http://127.0.0.1:8000/ {first}",
            "elsewhere: upload the folder to any static host (GitHub Pages, S3, nginx) and use its URL, "
            "e.g. --extra-index-url https://your.host/simple/",
        ]
    )


def cmd_doctor(args: argparse.Namespace) -> int:
    from tuned_kernels.registry.doctor import checks, report, serving_works

    found = checks()
    if args.json:
        print(json.dumps([dataclasses.asdict(c) for c in found], indent=2))
    else:
        print(report(found))
    return 0 if serving_works(found) else 1


class _Parser(argparse.ArgumentParser):
    """Help shows each option's default; a bad command line is one line on stderr and exit status 2."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(formatter_class=_Formatter, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples as written; an option's default shown where it has one worth saying."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if default in (None, False, [], argparse.SUPPRESS) or action.required or "%(default)" in text:
            return text
        return f"{text} (default: {'/'.join(map(str, default)) if isinstance(default, tuple) else default})"


def _command(sub: Any, name: str, summary: str, description: str, examples: str, func: Any) -> Any:
    """A subcommand with its one-line summary (in the top-level list), its description and examples."""
    p = sub.add_parser(
        name,
        help=summary,
        description=f"{summary[0].upper()}{summary[1:]}.\n\n{description}",
        epilog=f"examples:\n{examples}",
    )
    p.set_defaults(func=func)
    return p


def _json(p: Any, what: str = "the result") -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON on stdout")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _positive_seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def _add_inspection_commands(sub: Any) -> None:
    """What is here: the machine, this environment, results files."""
    p = _command(
        sub,
        "doctor",
        "check that serving can work here (paste it into a bug report)",
        "Versions, the target, whether TUNED_KERNELS=1 takes effect in this Python (the autoload hook),\n"
        "bundles found, selected and rejected (with reasons), the overlay cache and whether it is\n"
        "writable, Triton's cache, the C compiler Triton builds launchers with, and the TUNED_KERNELS*\n"
        "variables set. Exits 1 when serving cannot work here.",
        "  tuned-kernels doctor\n  tuned-kernels doctor --json",
        cmd_doctor,
    )
    _json(p, "the checks")

    p = _command(
        sub,
        "detect",
        "show this machine's target and compiler fingerprint",
        "The vendor, the arch bundles are built for (sm90, gfx942, ...; cpu without a GPU), the device, the\n"
        "compiler fingerprint bundles are matched on, and the name of the bundle wheel that fits.",
        "  tuned-kernels detect\n"
        "  tuned-kernels detect --expect sm90    # in CI: fail on a runner that is not an H100-class GPU",
        cmd_detect,
    )
    _json(p, "the target and compiler")
    p.add_argument("--expect", metavar="ARCH", help="exit 1 unless this machine is ARCH (a CI runner check)")

    p = _command(
        sub,
        "status",
        "show the bundles this environment serves from and the overlay",
        "Bundles found, those selected for this GPU and compiler (with their entries), those rejected\n"
        "(with the reason), and what the per-user overlay holds per kernel.",
        "  tuned-kernels status\n  TUNED_KERNELS_PATH=mine.pb.zst tuned-kernels status --json",
        cmd_status,
    )
    _json(p, "the bundles and overlay")

    p = _command(
        sub,
        "inspect",
        "show a results file: kernels, keys, best configs, target, compiler",
        "Any results file or bundle (.textproto, .pb, .binpb, each optionally .zst), a folder of them, a\n"
        "bundle wheel or an installed bundle's name: its target and compiler, how its kernels are\n"
        "identified, and per key the best config, its time and the configs rejected (with why).",
        "  tuned-kernels inspect app.pb.zst\n  tuned-kernels inspect app-tuned-cpu\n"
        "  tuned-kernels inspect dist/app_tuned_cpu-0.1.0-py3-none-any.whl\n"
        "  tuned-kernels inspect app.pb.zst --json | jq .entries",
        cmd_inspect,
    )
    p.add_argument(
        "file", help="a results file, a folder of them, a bundle wheel or an installed bundle's name"
    )
    _json(p, "the file's contents")


def _add_tuning_commands(sub: Any) -> None:
    """Producing results: tuning a corpus, capturing a program, compiling for a target."""
    p = _command(
        sub,
        "capture",
        "run a program and record every autotuning decision it makes",
        "Runs COMMAND unchanged and records each tuning decision of its @triton.autotune kernels (and\n"
        "torch.compile max-autotune's GEMM choices and kernel configs) into -o, with the compiled\n"
        "kernels on a GPU. A program that records nothing leaves an empty file; one that fails\n"
        "recording nothing leaves -o as it was. Exits with the program's status.",
        "  tuned-kernels capture -o app.pb.zst -- python app.py\n"
        "  tuned-kernels capture -o suite.pb.zst -- pytest -x tests/",
        cmd_capture,
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the results file to write")
    _json(p, "what was captured")
    p.add_argument(
        "command_line", nargs=argparse.REMAINDER, metavar="-- COMMAND ...", help="the program to run"
    )

    p = _command(
        sub,
        "tune",
        "tune a kernel corpus on this machine's target",
        "For each key of each kernel family, every config is compiled, checked against the family's\n"
        "reference (a config that fails to compile, run or match is rejected, with the reason) and\n"
        "timed; the winner, and on a GPU its compiled kernel, goes to -o. Uses every visible GPU.\n"
        "--shard I/N splits the keys across machines; merge the parts afterwards.",
        "  tuned-kernels tune --shapes full -o sm90.pb.zst\n"
        "  tuned-kernels tune --corpus my_corpus.py -o mine.pb.zst --time-budget 600\n"
        "  tuned-kernels tune --shapes full --shard 0/4 -o part0.pb.zst   # then: merge part*.pb.zst -o all.pb.zst\n"
        "  tuned-kernels tune --shapes full --dask tcp://scheduler:8786 -o '{target}-{compiler}.pb.zst'",
        cmd_tune,
    )
    p.add_argument(
        "--corpus",
        default="builtin",
        help="builtin, helion (the built-in Helion kernels), package.module:NAME or path/to/file.py[:NAME]",
    )
    p.add_argument(
        "--shapes", default="quick", help="the families' shape set: quick (CPU, CI) or full (GPU runners)"
    )
    p.add_argument(
        "--kernels",
        action="append",
        metavar="FAMILY",
        help="only this family (repeatable); default: every family",
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the results file to write")
    p.add_argument(
        "--shard",
        type=_shard,
        default=(0, 1),
        metavar="I/N",
        help="tune slice I of N (I from 0) of the keys: one machine of N",
    )
    p.add_argument("--resume", action="store_true", help="keep the output's finished keys, tune the rest")
    p.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="tune on a Dask cluster (tcp://HOST:8786), or on one started here: local (a worker per GPU) "
        "or local:N; each kind of GPU and compiler gets its own file (-o may hold {target} and {compiler})",
    )
    p.add_argument(
        "--dask-timeout",
        type=_positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long the scheduler at --dask ADDRESS has to answer (a refused connection fails at once)",
    )
    p.add_argument(
        "--jobs",
        type=_positive_int,
        default=os.cpu_count() or 1,
        help="threads compiling the next key's configs while this one is timed (GPU targets)",
    )
    p.add_argument(
        "--time-budget",
        type=_positive_seconds,
        default=None,
        metavar="SECONDS",
        help="stop starting new keys after this long (finished keys are kept); default: no limit",
    )
    p.add_argument(
        "--strategy",
        choices=("exhaustive", "seeded"),
        default="exhaustive",
        help="time every config, or first the configs that won nearby keys (--seed-from) and the "
        "family's heuristic seeds, stopping early",
    )
    p.add_argument(
        "--seed-from",
        action="append",
        metavar="RESULTS",
        help="earlier results (file or folder) whose winners seed --strategy seeded (repeatable)",
    )
    p.add_argument(
        "--artifacts",
        choices=("none", "winners", "all"),
        default="winners",
        help="which configs' compiled kernels to keep: each key's winner, every valid config, or none",
    )
    _json(p, "a summary")

    p = _command(
        sub,
        "compile",
        "compile a results file's winners for a GPU target, on any machine",
        "Rebuilds each entry's launch from the corpus and compiles its winning config for --target (no\n"
        "GPU needed), keeping the compiled kernels in -o so serving compiles nothing. Results of another\n"
        "Triton are refused.",
        "  tuned-kernels compile sm90.pb.zst --target sm90a -o sm90a.pb.zst",
        cmd_compile,
    )
    p.add_argument("results", help="the results file whose winners to compile")
    p.add_argument("--target", required=True, help="sm80, sm90, sm90a, sm100, gfx90a, gfx942, ...")
    p.add_argument("--corpus", default="builtin", help="the corpus whose cases launch the entries' keys")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the results file to write")
    _json(p, "a summary")

    p = _command(
        sub,
        "coverage",
        "run a program with these results and list every key that missed",
        "Runs COMMAND (your test suite, a benchmark) serving from RESULTS only, then lists each kernel\n"
        "key no bundle held: what to capture or tune next. Exits with the program's status.",
        "  tuned-kernels coverage app.pb.zst -- pytest tests/",
        cmd_coverage,
    )
    p.add_argument("results", help="a results file, bundle, or folder of them")
    _json(p, "hits and misses")
    p.add_argument(
        "command_line", nargs=argparse.REMAINDER, metavar="-- COMMAND ...", help="the program to run"
    )


def _add_packaging_commands(sub: Any) -> None:
    """Shipping results: joining them, wheels, indexes, compiler bumps."""
    p = _command(
        sub,
        "merge",
        "join results files; the faster entry wins per key",
        "Joins shards of one tune, or captures of several programs, into one file. Files of different\n"
        "targets or compilers are refused unless --allow-mixed.",
        "  tuned-kernels merge part*.pb.zst -o sm90.pb.zst\n"
        "  tuned-kernels merge old.pb.zst -o new.pb.zst --carry-over app   # files made before identity by source",
        cmd_merge,
    )
    p.add_argument("inputs", nargs="+", metavar="RESULTS", help="results files to join")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the results file to write")
    p.add_argument("--allow-mixed", action="store_true", help="merge files of different targets or compilers")
    p.add_argument(
        "--carry-over",
        action="append",
        default=[],
        metavar="MODULE",
        help="move entries of files made before identity by source, and of kernels since moved unchanged into "
        "MODULE from another module, to the kernels MODULE defines as they are identified now (repeatable; run "
        "where MODULE imports)",
    )
    _json(p, "a summary")

    p = _command(
        sub,
        "build-wheel",
        "bundle results into one wheel per GPU target: NAME-<arch>",
        "One reproducible wheel per target (tuned-kernels-sm90, ...), holding one bundle per compiler\n"
        "version. It declares no dependency on triton, so installing it never changes the user's Triton;\n"
        "at run time the bundle of the installed compiler is selected.",
        "  tuned-kernels build-wheel sm90.pb.zst -o dist/\n"
        "  tuned-kernels build-wheel mine.pb.zst -o dist/ --name acme-tuned --version 1.2",
        cmd_build_wheel,
    )
    p.add_argument("results", nargs="+", help="results files (any targets and compilers)")
    p.add_argument("-o", "--output", default="dist", metavar="DIR", help="where the wheels go")
    p.add_argument("--name", default="tuned-kernels", help="the publisher's name: wheels are NAME-<arch>")
    p.add_argument("--version", default="0.1.0", help="the bundle wheels' version (PEP 440)")
    _json(p, "the wheels built")

    p = _command(
        sub,
        "index",
        "write a PEP 503 simple index of the wheels in a folder",
        "Copies every wheel of DIST into OUT/<project>/ with sha256 fragments; serve OUT from any static\n"
        "host. Put the tuned-kernels wheel itself beside the bundles (pip wheel --no-deps -w dist .) so\n"
        "that pip install --extra-index-url URL tuned-kernels-<arch> finds everything it needs.",
        "  tuned-kernels index dist/ -o site/simple/\n"
        "  pip install --extra-index-url https://example.com/simple/ tuned-kernels-sm90",
        cmd_index,
    )
    p.add_argument("dist", help="the folder holding the wheels")
    p.add_argument("-o", "--output", default="simple", metavar="OUT", help="where the index goes")
    _json(p, "the projects indexed")

    p = _command(
        sub,
        "newer-compilers",
        "list Triton releases newer than every given bundle's compiler",
        "What a compiler-bump job rebuilds: the Triton releases on PyPI (or in a saved JSON file) newer\n"
        "than the newest compiler any given bundle was built with.",
        "  tuned-kernels newer-compilers dist/ --json",
        cmd_newer_compilers,
    )
    p.add_argument("results", nargs="+", help="results files, bundles or folders holding them")
    p.add_argument("--releases", default="https://pypi.org/pypi/{name}/json", help="PyPI JSON URL or file")
    p.add_argument("--pre", action="store_true", help="include pre-releases")
    _json(p, "the releases")


def build_parser() -> argparse.ArgumentParser:
    from tuned_kernels.version import TOOL_VERSION

    parser = _Parser(
        prog="tuned-kernels",
        description="Ahead-of-time tuned Triton kernels: capture or tune the configs your kernels autotune, ship\n"
        "them as a wheel per GPU and compiler, and serve them at run time with no benchmarking.",
        epilog="a first run:\n"
        "  tuned-kernels capture -o app.pb.zst -- python app.py      # record what app.py tunes\n"
        "  TUNED_KERNELS=1 TUNED_KERNELS_PATH=app.pb.zst python app.py   # served: nothing benchmarked\n"
        "  tuned-kernels doctor                                      # what is set up here\n\n"
        "tuned-kernels COMMAND --help says more about each command.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"tuned-kernels {TOOL_VERSION}",
        help="show the version and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    _add_inspection_commands(sub)
    _add_tuning_commands(sub)
    _add_packaging_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in ("tune", "capture", "status", "coverage"):  # doctor applies the rule itself
        from tuned_kernels.hardware.probe import interpret_without_gpu

        interpret_without_gpu()
    try:
        code: int = args.func(args)
        return code
    except TunedKernelsError as exc:
        print(printable(f"tuned-kernels {args.command}: {exc}"), file=sys.stderr)
        return 1
    except OSError as exc:  # a path that is a directory, read-only, missing, /proc ...
        where = f"{exc.filename}: " if exc.filename else ""
        print(printable(f"tuned-kernels {args.command}: {where}{exc.strerror or exc}"), file=sys.stderr)
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
