"""Putting a file into Inductor's cache directory the way a second process would: written beside its place
and linked in, so a file already there (the user's own, or one another process just wrote) is never
replaced, and a reader never sees half a file."""

from __future__ import annotations

import os
from pathlib import Path


def place_new_file(path: Path, data: bytes) -> bool:
    """Writes `data` at `path` unless a file is there; returns whether it was written."""
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    try:
        os.link(temporary, path)  # never replaces a file another process wrote meanwhile
        return True
    except FileExistsError:
        return False
    finally:
        temporary.unlink(missing_ok=True)
