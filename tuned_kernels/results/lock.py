"""A lock of the bundles a deployment serves: `tuned-kernels lock` writes the size and sha256 of every
bundle file this environment finds (installed packages and TUNED_KERNELS_PATH), and with
`TUNED_KERNELS_LOCK=FILE` set only files of those exact bytes are served; any other is left out, said once.
So a deployment serves what its CI tested, whatever else gets installed or named later. A file is matched by
its digest, not its path: the same wheel installed elsewhere is the same bundle."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuned_kernels.errors import TunedKernelsError, one_line

FORMAT = "tuned-kernels-lock"
VERSION = 1
ENV = "TUNED_KERNELS_LOCK"
MAX_LOCK_BYTES = 8 << 20


@dataclass(frozen=True)
class Locked:
    source: str  # where it was found when locked (an installed package, a TUNED_KERNELS_PATH entry)
    file: str
    size: int
    sha256: str


def lock_text(bundles: list[Locked]) -> str:
    rows = [vars(b) for b in sorted(bundles, key=lambda b: (b.source, b.file))]
    return json.dumps({"format": FORMAT, "version": VERSION, "bundles": rows}, indent=1) + "\n"


def read_lock(path: Path) -> frozenset[tuple[int, str]]:
    """The (size, sha256) of each bundle a lock file names; a file that is not a lock raises."""
    from tuned_kernels.results.files import read_regular_file

    try:  # not a regular file, too large or unreadable: ResultsFormatError, naming the file
        data: Any = json.loads(read_regular_file(str(path), MAX_LOCK_BYTES))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise TunedKernelsError(f"{one_line(str(path), 120)}: not JSON") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise TunedKernelsError(f"{one_line(str(path), 120)}: not a {FORMAT} of version {VERSION}")
    rows = data.get("bundles")
    if not isinstance(rows, list) or not all(
        isinstance(r, dict) and type(r.get("size")) is int and isinstance(r.get("sha256"), str) for r in rows
    ):
        raise TunedKernelsError(
            f"{one_line(str(path), 120)}: field bundles: expected a list of size and sha256"
        )
    return frozenset((r["size"], r["sha256"]) for r in rows)
