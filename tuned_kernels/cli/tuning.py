"""Producing results here: `tune` a kernel corpus, `compile` a results file's winners for a target."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from tuned_kernels.cli.parsing import command, json_option, positive_int, positive_seconds, shard
from tuned_kernels.timestamps import utc_now


def add_tune(sub: Any) -> None:
    p = command(
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
        type=shard,
        default=(0, 1),
        metavar="I/N",
        help="tune slice I of N (I from 0) of the keys: one machine of N",
    )
    p.add_argument("--resume", action="store_true", help="keep the output's finished keys, tune the rest")
    add_how_to_tune(p)
    json_option(p, "a summary")


def add_how_to_tune(p: Any) -> None:
    """`tune`'s options of how to tune: where, how fast, how long, which configs first, what to keep."""
    p.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="tune on a Dask cluster (tcp://HOST:8786), or on one started here: local (a worker per GPU) "
        "or local:N; each kind of GPU and compiler gets its own file (-o may hold {target} and {compiler})",
    )
    p.add_argument(
        "--dask-timeout",
        type=positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long the scheduler at --dask ADDRESS has to answer (a refused connection fails at once)",
    )
    p.add_argument(
        "--jobs",
        type=positive_int,
        default=0,
        help="threads compiling the next key's configs while this one is timed (GPU targets; default: the "
        "host's CPUs, divided among the GPUs tuning on it)",
    )
    p.add_argument(
        "--time-budget",
        type=positive_seconds,
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


def cmd_tune(args: argparse.Namespace) -> int:
    from tuned_kernels.aot.tune_report import TuneOptions
    from tuned_kernels.aot.tune_request import TuneRequest

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
    from tuned_kernels.results.formats import format_for

    format_for(args.output)  # a bad extension fails before any key is tuned
    if args.dask:  # (the client applies the interpreter rule as it loads the corpus, as the cluster starts)
        from tuned_kernels.aot.dask_tune import run_on_dask

        report = run_on_dask(request, args.dask, utc_now(), args.dask_timeout)
    else:
        from tuned_kernels.aot.workers import Workers

        early = Workers.early(request)  # before torch is imported here: their imports run beside this one's
        try:
            from tuned_kernels.hardware.probe import interpret_without_gpu

            interpret_without_gpu()  # (it imports torch) before the corpus defines its kernels
            from tuned_kernels.aot.tune_command import run_tune

            report = run_tune(request, utc_now(), early)
        except BaseException:
            if early is not None:
                early.close()
            raise
    from tuned_kernels.aot.tune_command import tuned_nothing

    written = ", ".join(report.outputs) or args.output
    summary = {**dataclasses.asdict(report), "output": args.output}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"tuned {report.tuned} keys ({report.resumed} done earlier"
            + (f", {report.other_kernel} for another kernel here" if report.other_kernel else "")
            + (f", {report.same_key} the same key as another case" if report.same_key else "")
            + f") in {report.seconds:.1f}s: "
            f"{report.configs_benchmarked} configs benchmarked, {report.rejected} rejected -> {written}"
            + (" (stopped at the time budget)" if report.stopped_early else "")
        )
        if report.artifact_note:
            print(f"  artifacts: {report.artifact_note}")
        if report.timed_by_do_bench:
            print(
                f"  timed by do_bench: {report.timed_by_do_bench} configs, their calls not capturable in a CUDA "
                "graph (do_bench counts the host's gaps between launches)"
            )
        for failure in report.failed:
            print(f"  failed: {failure}")
    nothing = tuned_nothing(report, request)
    for line in nothing:
        print(f"tuned-kernels: {line}", file=sys.stderr)
    return 1 if report.failed or nothing else 0


def add_compile(sub: Any) -> None:
    p = command(
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
    json_option(p, "a summary")


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


def add_commands(sub: Any) -> None:
    add_tune(sub)
    add_compile(sub)
