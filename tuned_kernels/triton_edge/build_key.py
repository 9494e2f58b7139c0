"""Triton's build key (`triton.runtime.cache.triton_key`: its version and the sha256 of its compiler, backends,
language and the 500 MB libtriton), remembered between processes. Triton computes it at a process's first
compile or cache look-up, Inductor for its graph keys, tuned-kernels for the compiler fingerprint: 0.4 to 0.6
s in every process on a 2-core CPU, the same in the next one.

The record, one small file per Triton install in tuned-kernels' cache folder, holds the key and a digest of
every file under Triton's folder as `stat` sees it (size, modification and change times, inode; bytecode left
out). A process whose Triton files all stat the same takes the key from the record; a file written, added or
removed (a reinstall, an edit: the change time moves with every write) computes the key as Triton does and
records it again. Linked folders are followed (an editable install links Triton's backends in) and their
targets named. A record that cannot be read, holds anything but a key, or was written by another user is
computed over; one that cannot be written leaves the key computed. Triton's own worker pools hand their
workers the key the same way (`triton.runtime.cache.triton_key = lambda: key`)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

MAX_RECORD_BYTES = 1 << 20
MAX_FILES = 50_000  # Triton 3.9 holds about 600: a folder past this is not stat'ed (the key computed instead)
RECORD_PREFIX = "triton-key-"


def files_state(root: Path) -> str:
    """A digest of every file under `root` as `stat` sees it (its path, size, times and inode), bytecode
    folders left out, linked folders followed (an editable install links Triton's backends and language
    extras in from elsewhere) and named with their targets: it changes when any file is written, added,
    removed or replaced, or a link is pointed elsewhere. Raises `OSError` past `MAX_FILES` files (a link
    into a large tree): such a folder is not worth stat'ing."""
    lines, seen = [], set()
    for folder, dirs, files in os.walk(root, followlinks=True):
        with contextlib.suppress(OSError):
            here = os.stat(folder)
            if (here.st_dev, here.st_ino) in seen:  # a link back up: walked already
                dirs[:] = []
                continue
            seen.add((here.st_dev, here.st_ino))
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in dirs:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                with contextlib.suppress(OSError):
                    lines.append(f"{os.path.relpath(path, root)}\0->{os.readlink(path)}")
        if len(lines) + len(files) > MAX_FILES:
            raise OSError(f"more than {MAX_FILES} files under {root}")
        for name in sorted(files):
            path = os.path.join(folder, name)
            with contextlib.suppress(OSError):
                s = os.stat(path)
                lines.append(
                    f"{os.path.relpath(path, root)}\0{s.st_size}\0{s.st_mtime_ns}\0{s.st_ctime_ns}\0{s.st_ino}"
                )
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()


def record_path(folder: Path, root: Path) -> Path:
    """The record of the Triton installed at `root`."""
    return folder / f"{RECORD_PREFIX}{hashlib.sha256(os.fsencode(root)).hexdigest()[:16]}.json"


def recorded_key(path: Path, state: str) -> str | None:
    """The key a record holds for files in `state` (None: no record, another state, not a record, or one
    another user wrote)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_RECORD_BYTES or info.st_uid != os.getuid():
            return None
        with open(path, encoding="utf-8") as f:
            data = json.loads(f.read(MAX_RECORD_BYTES))
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested past the parser's depth
        return None
    if not isinstance(data, dict) or data.get("files") != state:
        return None
    key = data.get("triton_key")
    return key if isinstance(key, str) and key else None


def remembered(compute: Callable[[], str], root: Path, folder: Callable[[], Path]) -> Callable[[], str]:
    """`compute`, Triton's key function, taking its value from the record in `folder()` while the files
    under `root` are as they were recorded, and recording it where they are not."""

    @functools.cache
    def triton_key() -> str:
        try:
            state = files_state(root)
            path = record_path(folder(), root)
        except Exception:  # no cache folder to be had: the key as Triton computes it
            return compute()
        key = recorded_key(path, state)
        if key is None:
            key = compute()
            with contextlib.suppress(Exception):  # the key stands, recorded or not
                from tuned_kernels.results.files import write_atomic

                write_atomic(path, json.dumps({"files": state, "triton_key": key}).encode("utf-8"))
        return key

    triton_key.tuned_kernels_remembered = True  # type: ignore[attr-defined]
    return triton_key


@functools.cache
def remember_when_imported() -> None:
    """Triton's key remembered from the import of `triton.runtime.cache` on (at once if it is imported
    already: then its own use and tuned-kernels' take the remembered key, an autotuner that bound it by name
    before keeps Triton's). Every entry point calls it: `TUNED_KERNELS=1`, `enable()`, the commands; asked
    once per process (a second call would only wait for the same import again)."""
    from tuned_kernels.post_import import when_imported

    when_imported("triton.runtime.cache", remember)


def remember(cache: ModuleType) -> None:
    """Makes `triton.runtime.cache.triton_key` the remembered one (where Triton is laid out as expected):
    before Triton's autotuner and Inductor bind it by name, when called as `cache` is imported. Triton's own
    stays wherever anything here fails."""
    try:
        compute = getattr(cache, "triton_key", None)
        where = getattr(cache, "__file__", None)
        if not callable(compute) or getattr(compute, "tuned_kernels_remembered", False) or not where:
            return
        root = Path(where).resolve().parents[1]  # triton/runtime/cache.py -> triton/
        setattr(cache, "triton_key", remembered(compute, root, _cache_folder))  # noqa: B010 (a module's name)
    except Exception:  # a Triton laid out otherwise: its key is computed as it always is
        return


def _cache_folder() -> Path:
    from tuned_kernels.results.overlay import cache_dir

    return cache_dir()
