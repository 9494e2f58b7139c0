"""Which compiler releases have no bundle yet: the question a scheduled compiler-bump job asks. Pure,
apart from `pypi_releases`, which reads PyPI's JSON API (or a saved copy of it)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

from tuned_kernels.errors import BundleError, one_line

PYPI_JSON = "https://pypi.org/pypi/{name}/json"
MAX_RELEASES_BYTES = 64 << 20


def newer_releases(bundled: Iterable[str], released: Iterable[str], include_pre: bool = False) -> list[str]:
    """Releases newer than every bundled version, oldest first (pre-releases only when asked)."""
    known = [_bundled_version(v) for v in bundled]
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


def _bundled_version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise BundleError(f"a bundle says it was built with triton {text[:40]!r}, not a version") from None


def pypi_releases(source: str, name: str = "triton") -> list[str]:
    """Release versions with at least one file, from PyPI's JSON API or a saved JSON file."""
    try:
        if source.startswith(("http://", "https://")):
            with urllib.request.urlopen(source.replace("{name}", name), timeout=30) as response:
                data = json.loads(response.read(MAX_RELEASES_BYTES))
        else:
            with open(source, encoding="utf-8") as f:
                data = json.loads(f.read(MAX_RELEASES_BYTES))
    except (OSError, ValueError) as exc:  # unreachable, missing, not JSON (URLError is an OSError)
        raise BundleError(f"cannot read the releases from {source}: {one_line(str(exc))}") from None
    releases = data.get("releases") if isinstance(data, dict) else None
    if not isinstance(releases, dict):
        raise BundleError(f"{source} is not PyPI's JSON for a project (no 'releases')")
    return [version for version, files in releases.items() if files]
