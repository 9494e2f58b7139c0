"""The `tuned-kernels` command line. Each command group has its own module (`inspection`, `capturing`,
`tuning`, `packaging`), each command's parser beside its handler; this module builds the parser and dispatches.

Errors of ours become one line on stderr and exit status 1 (a bad command line: status 2), never a
traceback. Commands that report something take --json.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from tuned_kernels.cli import capturing, inspection, misses, packaging, signing, tuning
from tuned_kernels.cli.parsing import Parser
from tuned_kernels.errors import TunedKernelsError, one_line, printable


def build_parser() -> Parser:
    from tuned_kernels.version import TOOL_VERSION

    parser = Parser(
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
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for group in (inspection, capturing, misses, tuning, packaging, signing):
        group.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tuned_kernels.triton_edge.build_key import remember_when_imported

    remember_when_imported()
    if args.command in ("capture", "status", "coverage"):  # doctor and tune apply the rule themselves
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
    except (
        ValueError,
        LookupError,
        TypeError,
        RecursionError,
    ) as exc:  # bad input that reached a library: still one line
        print(f"tuned-kernels {args.command}: {one_line(f'{type(exc).__name__}: {exc}')}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"tuned-kernels {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `tuned-kernels inspect FILE | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
