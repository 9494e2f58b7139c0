"""Which results files a path names: the file itself, or the bundle files under a directory. I/O only to
list directories; reading is files.py's."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.results.formats import BINARY_SUFFIXES, COMPRESSED_SUFFIX

# In a directory only these name a bundle: `.txt` is a results file only when named on its own (a
# directory of notes, or /usr, must not be read as bundles).
DIRECTORY_SUFFIXES = (".textproto", *BINARY_SUFFIXES)


def _is_bundle_name(name: str) -> bool:
    return name.lower().removesuffix(COMPRESSED_SUFFIX).endswith(DIRECTORY_SUFFIXES)


# What an installed bundle's directory may hold before none of it is read: a package listing more is not a
# bundle wheel (or is a bomb: opening each file costs the user's every fresh start).
MAX_LISTED = 20_000
MAX_BUNDLE_FILES = 1_000


def results_files_in(root: Path, bounded: bool = False) -> list[Path]:
    """`root` itself unless a directory (the reader refuses what is not a regular results file), else the
    regular files under it with a bundle's extension; symbolic links to directories are not followed.
    `bounded`: a directory listing more than MAX_LISTED entries or MAX_BUNDLE_FILES bundle files is refused
    (TunedKernelsError) without reading further."""
    if not root.is_dir():
        return [root] if os.path.lexists(root) else []
    found: list[Path] = []
    for listed, files in _bundle_files_by_folder(root):
        found += files
        if bounded and (listed > MAX_LISTED or len(found) > MAX_BUNDLE_FILES):
            raise TunedKernelsError(
                f"{root} holds more than {MAX_BUNDLE_FILES} bundle files or {MAX_LISTED} entries; none read"
            )
    return sorted(found)


def holds_results_file(root: Path) -> bool:
    """Whether the folder `root` holds a file with a bundle's extension (stops at the first, looks at no
    more than MAX_LISTED entries: a folder that lists more counts as holding one; reading it says more)."""
    return any(files or listed > MAX_LISTED for listed, files in _bundle_files_by_folder(root))


def _bundle_files_by_folder(root: Path) -> Iterator[tuple[int, list[Path]]]:
    """Per folder under `root` (symbolic links to folders not followed): the entries listed so far, and the
    regular files in it with a bundle's extension."""
    listed = 0
    for folder, folders, names in os.walk(root):
        listed += len(folders) + len(names)
        yield listed, [Path(folder, n) for n in names if _is_bundle_name(n) and Path(folder, n).is_file()]


def results_files_given(given: Sequence[str]) -> list[Path]:
    """The results files of paths a user typed: each must exist (a directory may hold none yet)."""
    paths = []
    for text in given:
        if not os.path.lexists(text):
            raise TunedKernelsError(f"{text}: no such results file or directory")
        paths += results_files_in(Path(text))
    return paths
