"""The command line's parts every command uses: the parser (one line on a bad command line), help
that shows defaults, a subcommand with its summary, description and examples, and argument types."""

from __future__ import annotations

import argparse
import difflib
import re
from typing import Any, NoReturn


class Parser(argparse.ArgumentParser):
    """Help shows each option's default; a bad command line is one line on stderr and exit status 2."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(formatter_class=Formatter, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {with_suggestion(message)} (see {self.prog} --help)\n")


def with_suggestion(message: str) -> str:
    """argparse's `invalid choice: 'statsu' (choose from ...)` as `invalid choice: 'statsu' (did you mean
    'status'?)` where one choice is near; the message as it is otherwise."""
    found = re.search(r"invalid choice: (.+?) \(choose from (.*)\)$", message)
    if found is None:
        return message
    given = found.group(1).strip("'\"")
    choices = [c.strip().strip("'\"") for c in found.group(2).split(",")]
    near = difflib.get_close_matches(given, choices, n=1)
    return (
        message
        if not near
        else f"{message[: found.start(2) - len('(choose from ')]}(did you mean {near[0]!r}?)"
    )


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples as written; an option's default shown where it has one worth saying."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if default in (None, False, [], argparse.SUPPRESS) or action.required or "%(default)" in text:
            return text
        return f"{text} (default: {'/'.join(map(str, default)) if isinstance(default, tuple) else default})"


def command(sub: Any, name: str, summary: str, description: str, examples: str, func: Any) -> Any:
    """A subcommand with its one-line summary (in the top-level list), its description and examples."""
    p = sub.add_parser(
        name,
        help=summary,
        description=f"{summary[0].upper()}{summary[1:]}.\n\n{description}",
        epilog=f"examples:\n{examples}",
    )
    p.set_defaults(func=func)
    return p


def json_option(p: Any, what: str = "the result") -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON on stdout")


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def positive_seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def shard(text: str) -> tuple[int, int]:
    from tuned_kernels.aot.corpus import parse_shard

    try:
        return parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
