"""Checking a field read from outside (a bundle, Inductor's cache files) against a pattern, the whole string
and nothing less. Pure. `re.match` with `^...$` is not enough: `$` also matches before a final newline, so
'meta.json\\n' would pass as a file name and reach the user's Triton cache, '*fp32\\n' a launcher's source."""

from __future__ import annotations

import re


def whole(pattern: str) -> re.Pattern[str]:
    """`pattern` (written without anchors) for `matches`."""
    return re.compile(pattern)


def matches(pattern: re.Pattern[str], value: object) -> bool:
    """Whether `value` is a string that `pattern` matches from its first character to its last."""
    return isinstance(value, str) and pattern.fullmatch(value) is not None
