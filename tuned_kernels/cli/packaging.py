"""Shipping results: `merge`, `build-wheel`, `index` and `newer-compilers`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tuned_kernels.cli.parsing import command, json_option
from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.timestamps import utc_now

LARGE_WHEEL_BYTES = 100 << 20


def add_merge(sub: Any) -> None:
    p = command(
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
    json_option(p, "a summary")


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


def add_build_wheel(sub: Any) -> None:
    p = command(
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
    p.add_argument(
        "--sign-key",
        default=None,
        metavar="KEY",
        help="sign each bundle with this private key (tuned-kernels keygen)",
    )
    json_option(p, "the wheels built")


def cmd_build_wheel(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tuned_kernels.packager.wheel import build_wheels

    key = Path(args.sign_key).read_bytes() if args.sign_key else None
    wheels = build_wheels(args.results, Path(args.output), args.version, args.name, key)
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


def add_index(sub: Any) -> None:
    p = command(
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
    json_option(p, "the projects indexed")


def cmd_index(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tuned_kernels.packager.index import write_index

    projects = write_index(Path(args.dist), Path(args.output))
    if args.json:
        print(json.dumps({"projects": projects, "output": args.output}))
    else:
        print(index_instructions(projects, Path(args.output)))
    return 0


def add_newer_compilers(sub: Any) -> None:
    p = command(
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
    json_option(p, "the releases")


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


def index_instructions(projects: list[str], output: Path) -> str:
    """What to run to serve an index folder and install from it: here, and behind a real host."""
    import shlex

    folder = shlex.quote(str(output.resolve()))
    first = projects[0] if projects else "NAME"
    missing = (
        ["note: no tuned-kernels wheel in the folder: an install from it needs tuned-kernels from another "
         "index; or put its wheel beside the bundles (pip wheel --no-deps -w DIST tuned-kernels) and index again"]
        if projects and "tuned-kernels" not in projects
        else []
    )  # fmt: skip
    return "\n".join(
        [
            f"indexed {', '.join(projects) or 'nothing'} -> {output.as_posix().rstrip('/')}/",
            "serve it here:  python -m http.server 8000 --bind 127.0.0.1 --directory " + folder,
            f"install from it:  pip install --extra-index-url http://127.0.0.1:8000/ {first}",
            "elsewhere: upload the folder to any static host (GitHub Pages, S3, nginx) and use its URL, "
            "e.g. --extra-index-url https://your.host/simple/",
            *missing,
        ]
    )


def add_commands(sub: Any) -> None:
    add_merge(sub)
    add_build_wheel(sub)
    add_index(sub)
    add_newer_compilers(sub)
