"""Which results files a path names: the file itself, or the bundle files under a directory. I/O only to
list directories; reading is files.py's."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.results.formats import BINARY_SUFFIXES, COMPRESSED_SUFFIX

# In a directory only these name a bundle: `.txt` is a results file only when named on its own (a
# directory of notes, or /usr, must not be read as bundles).
DIRECTORY_SUFFIXES = (".textproto", *BINARY_SUFFIXES)


def _is_bundle_name(name: str) -> bool:
    return name.lower().removesuffix(COMPRESSED_SUFFIX).endswith(DIRECTORY_SUFFIXES)


def results_files_in(root: Path) -> list[Path]:
    """`root` itself unless a directory (the reader refuses what is not a regular results file), else the
    regular files under it with a bundle's extension; symbolic links to directories are not followed."""
    if not root.is_dir():
        return [root] if os.path.lexists(root) else []
    found = []
    for folder, _, names in os.walk(root):
        found += [Path(folder, n) for n in names if _is_bundle_name(n) and Path(folder, n).is_file()]
    return sorted(found)


def results_files_given(given: Sequence[str]) -> list[Path]:
    """The results files of paths a user typed: each must exist (a directory may hold none yet)."""
    paths = []
    for text in given:
        if not os.path.lexists(text):
            raise TunedKernelsError(f"{text}: no such results file or directory")
        paths += results_files_in(Path(text))
    return paths
