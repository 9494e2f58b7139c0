"""Inductor keys each of its cache look-ups with a hash of the installed torch's source files (`torch_key`):
every process reads and hashes them all at its first torch.compile'd call (some 2,300 files: 0.1 s on an
H200 machine with torch 2.11, served or not). A capture records that hash beside the digest of the file list
of the wheel torch was installed from (its dist-info RECORD, which holds every file's sha256). A served
process whose torch was installed from the same wheel, none of its files changed since (none newer than that
list), takes the hash from the bundle instead of computing it.

Only from a bundle whose code is served: the hash decides which cached graphs Inductor loads. A torch
installed from source, in editable mode or by another installer (no RECORD beside it) computes it as usual.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from tuned_kernels import model
from tuned_kernels.inductor_edge.keys import PREFIX, torch_source_hash
from tuned_kernels.whole_match import matches, whole

NAME = f"{PREFIX}torch_key"
CAPTURED = "tuned-kernels-torch-key"  # in a capture's cache directory: this wheel's digest and torch_key
MAX_RECORD_BYTES = 16 << 20
MAX_FILES_LOOKED_AT = 50_000
HEX_256 = whole(r"[0-9a-f]{64}")
SOURCES = (".py", ".so", ".cpp", ".ld")  # what torch_key reads: modules (Python and extension) and two files


def identity() -> model.KernelIdentity:
    return model.KernelIdentity(NAME, torch_source_hash())


def installed_wheel(package: Path) -> str | None:
    """The sha256 of the RECORD of the wheel the torch package at `package` was installed from, where none of
    its files is newer than that RECORD; None otherwise (no single RECORD beside it, or a file changed)."""
    records = list(package.parent.glob(f"{package.name}-*.dist-info/RECORD"))
    if len(records) != 1:
        return None
    try:
        with open(records[0], "rb") as f:
            written = os.fstat(f.fileno()).st_mtime_ns
            data = f.read(MAX_RECORD_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_RECORD_BYTES or _changed_since(package, written):
        return None
    return hashlib.sha256(data).hexdigest()


def _changed_since(package: Path, written_ns: int) -> bool:
    """Whether a source file under `package` was written after `written_ns` (or there are too many to look
    at): a stat of each, no read."""
    looked_at = 0
    folders = [str(package)]
    while folders:
        try:
            with os.scandir(folders.pop()) as found:
                for item in found:
                    looked_at += 1
                    if looked_at > MAX_FILES_LOOKED_AT:
                        return True
                    if item.is_dir(follow_symlinks=False):
                        if item.name != "__pycache__":
                            folders.append(item.path)
                    elif (
                        item.name.endswith(SOURCES)
                        and item.stat(follow_symlinks=False).st_mtime_ns > written_ns
                    ):
                        return True
        except OSError:
            return True
    return False


def torch_package() -> Path:
    import torch

    return Path(torch.__file__).parent


def record_for_capture(cache_dir: Path) -> None:
    """Inside a capture, as its program ends: this wheel's digest and Inductor's `torch_key`, into the
    capture's cache directory for `harvest`. Nothing where torch was not installed from a wheel."""
    wheel = installed_wheel(torch_package())
    if wheel is None:
        return
    from torch._inductor.codecache import torch_key

    with contextlib.suppress(OSError):
        (cache_dir / CAPTURED).write_text(json.dumps({"wheel": wheel, "torch_key": torch_key().hex()}))


def harvest(cache_dir: Path) -> list[model.Entry]:
    """The entry `record_for_capture` left in a capture's cache directory (none if none)."""
    try:
        recorded = json.loads((cache_dir / CAPTURED).read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(recorded, dict):
        return []
    wheel, key = recorded.get("wheel"), recorded.get("torch_key")
    if not (
        isinstance(wheel, str) and isinstance(key, str) and matches(HEX_256, wheel) and matches(HEX_256, key)
    ):
        return []
    config = model.Config.of({"torch_key": key})
    return [model.Entry(identity(), (wheel,), config, found_by=model.FoundBy.CAPTURED)]


def serve(entries: Iterable[model.Entry]) -> None:
    """Sets Inductor's `torch_key` from the entry for the wheel torch is installed from, if one is among
    `entries` and Inductor has not computed it yet."""
    offered = {}
    for entry in entries:
        key = dict(entry.best.kwargs).get("torch_key")
        if len(entry.key) == 1 and isinstance(key, str) and matches(HEX_256, key):
            offered[entry.key[0]] = key
    wheel = installed_wheel(torch_package()) if offered else None
    value = offered.get(wheel) if wheel is not None else None
    if value is None:
        return
    from torch._inductor.codecache import torch_key

    setter = getattr(torch_key, "set", None)
    if callable(setter):
        with contextlib.suppress(
            AssertionError, RuntimeError
        ):  # computed already (2.11 asserts, later raises)
            setter(bytes.fromhex(value))


def serve_when_imported(entries: list[model.Entry]) -> None:
    """`serve(entries)` once Inductor's cache code is imported: before Inductor first computes the hash."""
    from tuned_kernels.post_import import when_imported

    when_imported("torch._inductor.codecache", lambda _: serve(entries))
