"""What is here: `doctor`, `detect`, `status` and `inspect` (this machine, this environment, results files)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

from tuned_kernels.cli.parsing import command, json_option
from tuned_kernels.errors import printable

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


def add_doctor(sub: Any) -> None:
    p = command(
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
    json_option(p, "the checks")


def cmd_doctor(args: argparse.Namespace) -> int:
    from tuned_kernels.registry.doctor import checks, report, serving_works

    found = checks()
    if args.json:
        print(json.dumps([dataclasses.asdict(c) for c in found], indent=2))
    else:
        print(report(found))
    return 0 if serving_works(found) else 1


def add_detect(sub: Any) -> None:
    p = command(
        sub,
        "detect",
        "show this machine's target and compiler fingerprint",
        "The vendor, the arch bundles are built for (sm90, gfx942, ...; cpu without a GPU), the device, the\n"
        "compiler fingerprint bundles are matched on, and the name of the bundle wheel that fits.",
        "  tuned-kernels detect\n"
        "  tuned-kernels detect --expect sm90    # in CI: fail on a runner that is not an H100-class GPU",
        cmd_detect,
    )
    json_option(p, "the target and compiler")
    p.add_argument("--expect", metavar="ARCH", help="exit 1 unless this machine is ARCH (a CI runner check)")


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


def add_status(sub: Any) -> None:
    p = command(
        sub,
        "status",
        "show the bundles this environment serves from and the overlay",
        "Bundles found, those selected for this GPU and compiler (with their entries), those rejected\n"
        "(with the reason), and what the per-user overlay holds per kernel.",
        "  tuned-kernels status\n  TUNED_KERNELS_PATH=mine.pb.zst tuned-kernels status --json",
        cmd_status,
    )
    json_option(p, "the bundles and overlay")


def cmd_status(args: argparse.Namespace) -> int:
    from tuned_kernels.registry import Registry, installed_registry

    # quiet: a rejected bundle's reason is a line below, not a warning beside it
    summary = {
        k: v for k, v in (installed_registry() or Registry()).summary(quiet=True).items() if k in ENVIRONMENT
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(printable(f"target     {summary['target']}, {summary['compiler']}"))
    for chosen in summary["selected"]:
        entries = summary["bundle_entries"].get(chosen["file"], 0)
        print(printable(f"selected   {chosen['bundle']}  ({chosen['file']}): {entries} entries"))
    for rejected in summary["rejected"]:
        print(printable(f"rejected   {rejected['bundle']}: {rejected['reason']}"))
    if not summary["selected"] and not summary["rejected"]:
        given = os.environ.get("TUNED_KERNELS_PATH")
        hint = "install tuned-kernels-<target> or set TUNED_KERNELS_PATH"
        print(
            printable(
                f"bundles    none found ({f'TUNED_KERNELS_PATH={given}: none there' if given else hint})"
            )
        )
    print(f"entries    {summary['entries']}")
    overlay = summary["overlay"]
    print(printable(f"overlay    {overlay['path']} ({overlay['bytes']} bytes)"))
    for kernel, count in overlay["entries_per_kernel"].items():
        print(printable(f"  tuned    {kernel}: {count} keys"))
    from tuned_kernels.registry.environment_check import environment_problems

    # with serving on, enabling warned of the settings' problems too: each said once
    for problem in dict.fromkeys([*environment_problems(os.environ), *summary["problems"]]):
        if not any(rejected["reason"] in problem for rejected in summary["rejected"]):  # said above
            print(printable(f"problem    {problem}"))
    return 0


def add_inspect(sub: Any) -> None:
    p = command(
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
    json_option(p, "the file's contents")


def cmd_inspect(args: argparse.Namespace) -> int:
    from tuned_kernels.results.inspected import results_named
    from tuned_kernels.results.report import results_summary, results_table

    named = results_named(args.file)
    if args.json:
        shown = [{"file": where, **results_summary(results)} for where, results in named]
        print(json.dumps(shown[0] if len(shown) == 1 else shown, indent=2))
    else:
        tables = [results_table(results) for _, results in named]
        heads = [
            (f"file      {printable(where)}\n" if len(named) > 1 else "") + _signed_line(where)
            for where, _ in named
        ]
        print("\n\n".join(head + table for head, table in zip(heads, tables, strict=True)))
    return 0


def _signed_line(where: str) -> str:
    """Who signed a results file on disk, or why its signature does not hold ("" where it has none)."""
    from tuned_kernels.results.provenance import signature_of

    if "!" in where or not Path(where).is_file():
        return ""
    signer, problem = signature_of(Path(where))
    if problem is not None:
        return f"signed    no: {printable(problem)}\n"
    return f"signed    by {signer}\n" if signer else ""


def add_commands(sub: Any) -> None:
    add_doctor(sub)
    add_detect(sub)
    add_status(sub)
    add_inspect(sub)
