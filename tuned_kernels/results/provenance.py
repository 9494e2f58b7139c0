"""Where a bundle file came from: an installed bundle package, or a file named in TUNED_KERNELS_PATH that
only this user (or root) can write, or one that others can. A file others can write could be replaced
with code between the capture and this run, so `trust.why_no_code` serves only its configs. The checks
follow OpenSSH's for its key files: the file and every folder above it are owned by this user or root and
not writable by group or others (a folder with the sticky bit, such as /tmp, counts as safe: others
cannot replace what is in it)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tuned_kernels import signing
from tuned_kernels.errors import ResultsFormatError, one_line
from tuned_kernels.results.digests import digest_of
from tuned_kernels.results.overlay import cache_dir
from tuned_kernels.results.rollback import why_rolled_back
from tuned_kernels.trust import Origin, Provenance

_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def provenance_of(
    path: Path,
    packaged: bool,
    digest: tuple[int, str] | None,
    read_from: tuple[int, int] | None = None,
    built_at: str | None = None,
) -> Provenance:
    """`digest`: the size and sha256 of the bytes served from `path`, hashed as they were read where a
    signature was beside the file then (None: there was none, and one that appeared since does not hold).
    `read_from`: the device and inode of the file they were read from: the file checked must be that one
    (a link or file swapped between the read and the check is not the file checked). `built_at`: the
    header's time, for a signed file to be compared with the builds served here before (rollback.py; None:
    not compared, as for a file a lock pins)."""
    signer, signature_problem = signature_of(path, digest or "read without one")
    if signer is not None and built_at is not None:
        signature_problem = why_rolled_back(signer, path.name, built_at, cache_dir())
    if packaged:
        return Provenance(Origin.PACKAGE, None, signer, signature_problem)
    problem = _writable_by_others(path, read_from)
    origin = Origin.PRIVATE_FILE if problem is None else Origin.SHARED_FILE
    return Provenance(origin, problem, signer, signature_problem)


def signature_of(path: Path, digest: tuple[int, str] | str | None = None) -> tuple[str | None, str | None]:
    """The key that signed the results file `path` (its `.sig` beside it), or why its signature does not
    hold; (None, None) where it has none. `digest`: the size and sha256 of the bytes served (None: the file
    is hashed now; "read without one": the file was read before its signature was there)."""
    sidecar = Path(str(path) + signing.SUFFIX)
    if not os.path.lexists(sidecar):
        return None, None
    if isinstance(digest, str):
        return None, "its signature appeared while the file was read"
    from tuned_kernels.results.files import read_regular_file

    try:
        signature = signing.Signature.from_json(read_regular_file(str(sidecar), signing.MAX_SIGNATURE_BYTES))
        size, sha256 = digest or digest_of(path)
    except signing.SignatureError as exc:
        return None, f"{sidecar.name}: {exc}"
    except ResultsFormatError as exc:  # not a regular file, too large, unreadable: read as a bundle is
        return None, f"{sidecar.name}: {exc.cause}"
    except OSError as exc:  # the results file itself, hashed now
        return None, f"{path.name} cannot be read ({one_line(exc.strerror or str(exc), 60)})"
    why = signing.why_not_valid(signature, path.name, size, sha256)
    return (signature.key, None) if why is None else (None, why)


def _writable_by_others(path: Path, read_from: tuple[int, int] | None = None) -> str | None:
    """Why someone other than this user or root could change what `path` holds (or did, while it was read
    from `read_from`), or None."""
    me = os.getuid() if hasattr(os, "getuid") else None
    try:
        real = Path(os.path.realpath(path))
        checked = [real, *real.parents]
        for place in checked:
            info = os.stat(place)
            if place == real and read_from is not None and (info.st_dev, info.st_ino) != read_from:
                return f"{one_line(str(path), 120)} was replaced while it was read"
            is_folder = stat.S_ISDIR(info.st_mode)
            if me is not None and info.st_uid not in (me, 0):
                return f"{one_line(str(place), 120)} belongs to another user (uid {info.st_uid})"
            if info.st_mode & _OTHERS_WRITE and not (is_folder and info.st_mode & stat.S_ISVTX):
                who = "its group" if not info.st_mode & stat.S_IWOTH else "every user"
                return f"{one_line(str(place), 120)} can be written by {who}"
    except OSError as exc:
        return f"{one_line(str(path), 120)} cannot be checked ({one_line(exc.strerror or str(exc), 60)})"
    return None
