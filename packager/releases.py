"""Which compiler releases have no bundle yet: the question a scheduled compiler-bump job asks. Pure,
apart from `pypi_releases`, which reads PyPI's JSON API (or a saved copy of it)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

PYPI_JSON = "https://pypi.org/pypi/{name}/json"


def newer_releases(bundled: Iterable[str], released: Iterable[str], include_pre: bool = False) -> list[str]:
    """Releases newer than every bundled version, oldest first (pre-releases only when asked)."""
    known = [Version(v) for v in bundled]
    newest = max(known) if known else None
    found = []
    for text in released:
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if (version.is_prerelease or version.is_devrelease) and not include_pre:
            continue
        if newest is None or version > newest:
            found.append(version)
    return [str(v) for v in sorted(set(found))]


def pypi_releases(source: str, name: str = "triton") -> list[str]:
    """Release versions with at least one file, from PyPI's JSON API or a saved JSON file."""
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source.format(name=name), timeout=30) as response:
            data = json.load(response)
    else:
        with open(source, encoding="utf-8") as f:
            data = json.load(f)
    return [version for version, files in data.get("releases", {}).items() if files]
