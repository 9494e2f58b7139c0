"""Inductor keys each of its cache look-ups with a hash of the installed torch's source files (`torch_key`):
every process reads and hashes them all at its first torch.compile'd call (some 2,300 files: 0.1 s on an
H200 machine with torch 2.11, served or not). A capture records that hash beside a digest of the wheel torch
was installed from: the sha256 of every torch file its RECORD lists (the lines with a hash, sorted: the
install's own paths and bytecode left out). A served process whose torch was installed from the same wheel,
its files unchanged since (each source file of the size RECORD gives, none missing, none added, none newer
than RECORD), takes the hash from the bundle instead of computing it.

The capture also records its install's paths, so that a graph's C++ objects are found where torch was
installed from the same wheel at another path (cpp_objects.py).

Only from a bundle whose code is served: the hash decides which cached graphs Inductor loads. A torch
installed from source, in editable mode or by another installer (no RECORD beside it) computes it as usual,
and so do Inductor's compile workers (their parent hands them its hash).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tuned_kernels import model
from tuned_kernels.inductor_edge import cpp_objects
from tuned_kernels.inductor_edge.autotune_cache import capturing_cache_dir
from tuned_kernels.inductor_edge.keys import PREFIX, torch_source_hash
from tuned_kernels.whole_match import matches, whole

NAME = f"{PREFIX}torch_key"
CAPTURED = "tuned-kernels-torch-key"  # in a capture's cache directory: this wheel's digest and torch_key
MAX_RECORD_BYTES = 16 << 20
MAX_PATH = 4096
PATH_PREFIX = "install_"  # the capture's install paths in its entry's config: install_torch, ...
MAX_FILES_LOOKED_AT = 50_000
HEX_256 = whole(r"[0-9a-f]{64}")
SOURCES = (".py", ".so", ".cpp", ".ld")  # what torch_key reads: modules (Python and extension) and two files
COMPILE_WORKER = ("_inductor", "compile_worker", "__main__.py")
_served = [False]


@dataclass(frozen=True)
class Wheel:
    digest: str  # sha256 of the sorted lines of RECORD that give a torch file's hash
    sizes: dict[str, int]  # each source file's size by its path under the package, as RECORD gives it
    written_ns: int  # when RECORD was written


def identity() -> model.KernelIdentity:
    return model.KernelIdentity(NAME, torch_source_hash())


def wheel_of(package: Path) -> Wheel | None:
    """What the RECORD of the wheel the package at `package` was installed from says (None: no single
    RECORD beside it, or one unreadable)."""
    records = list(package.parent.glob(f"{package.name}-*.dist-info/RECORD"))
    if len(records) != 1:
        return None
    try:
        with open(records[0], "rb") as f:
            written = os.fstat(f.fileno()).st_mtime_ns
            data = f.read(MAX_RECORD_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_RECORD_BYTES:
        return None
    hashed, sizes = [], {}
    for line in data.decode(errors="replace").splitlines():
        path, _, rest = line.partition(",")
        digest, _, size = rest.partition(",")
        if path.startswith(f"{package.name}/") and digest.startswith("sha256="):
            hashed.append(line)
            if path.endswith(SOURCES) and size.isdecimal():
                sizes[path[len(package.name) + 1 :]] = int(size)
    if not hashed:
        return None
    return Wheel(hashlib.sha256("\n".join(sorted(hashed)).encode()).hexdigest(), sizes, written)


def unchanged(package: Path, wheel: Wheel) -> bool:
    """Whether the package's source files are those RECORD lists, at its sizes, none written after it: a
    stat of each, no read."""
    seen, looked_at = 0, 0
    folders = [package]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as found:
                for item in found:
                    looked_at += 1
                    if looked_at > MAX_FILES_LOOKED_AT:
                        return False
                    if item.is_dir(follow_symlinks=False):
                        if item.name != "__pycache__":
                            folders.append(Path(item.path))
                    elif item.name.endswith(SOURCES):
                        info = item.stat(follow_symlinks=False)
                        relative = Path(item.path).relative_to(package).as_posix()
                        if wheel.sizes.get(relative) != info.st_size or info.st_mtime_ns > wheel.written_ns:
                            return False
                        seen += 1
        except OSError:
            return False
    return seen == len(wheel.sizes)


def torch_package() -> Path:
    import torch

    return Path(torch.__file__).parent


def in_compile_worker() -> bool:
    """Whether this process is Inductor's compile-worker pool (started as its script's path)."""
    main = str(getattr(sys.modules.get("__main__"), "__file__", "") or "")
    return Path(main).parts[-3:] == COMPILE_WORKER


def record_for_capture() -> None:
    """Inside a capture, as its program ends: this wheel's digest and Inductor's `torch_key`, into the
    capture's cache directory for `harvest`. Nothing where torch was not installed from a wheel."""
    cache_dir = capturing_cache_dir()
    if cache_dir is None or in_compile_worker():
        return
    package = torch_package()
    wheel = wheel_of(package)
    if wheel is None or not unchanged(package, wheel):
        return
    from torch._inductor.codecache import torch_key

    from tuned_kernels.results.files import write_atomic

    recorded = {"wheel": wheel.digest, "torch_key": torch_key().hex(), "paths": cpp_objects.install_paths()}
    with contextlib.suppress(OSError):
        write_atomic(cache_dir / CAPTURED, json.dumps(recorded).encode())


def harvest(cache_dir: Path) -> list[model.Entry]:
    """The entry `record_for_capture` left in a capture's cache directory (none if none)."""
    try:
        recorded = json.loads((cache_dir / CAPTURED).read_text())
    except (OSError, ValueError):
        return []
    wheel, key = (recorded.get(k) if isinstance(recorded, dict) else None for k in ("wheel", "torch_key"))
    if not (matches(HEX_256, wheel) and matches(HEX_256, key)):
        return []
    paths = recorded.get("paths")
    installed = {
        f"{PATH_PREFIX}{name}": paths[name]
        for name in cpp_objects.PATHS
        if isinstance(paths, dict) and _a_path(paths.get(name))
    }
    config = model.Config.of({"torch_key": key, **installed})
    return [model.Entry(identity(), (wheel,), config, found_by=model.FoundBy.CAPTURED)]


def _a_path(value: object) -> bool:
    return isinstance(value, str) and value.startswith("/") and len(value) <= MAX_PATH and value.isprintable()


def serve(entries: Iterable[model.Entry], objects: Mapping[str, str] | None = None) -> None:
    """Sets Inductor's `torch_key` from the entry for the wheel torch is installed from, if one is among
    `entries`, torch's files are unchanged and Inductor has not computed it yet (not in its compile workers:
    they are handed it). From that entry too, where torch is installed at another path than the capture's:
    the bundles' C++ objects (`objects`: path in the cache directory, sha256) are found under the names
    the capture's paths give them (cpp_objects.py), whether or not Inductor had computed its hash."""
    offered: dict[object, Mapping[str, object]] = {}
    for entry in entries:
        kwargs = dict(entry.best.kwargs)
        if len(entry.key) == 1 and matches(HEX_256, kwargs.get("torch_key")):
            offered[entry.key[0]] = kwargs
    if not offered or in_compile_worker():
        return
    package = torch_package()
    wheel = wheel_of(package)
    recorded = offered.get(wheel.digest) if wheel is not None else None
    if wheel is None or recorded is None or not unchanged(package, wheel):
        return
    value = str(recorded["torch_key"])
    paths = {name: recorded.get(f"{PATH_PREFIX}{name}") for name in cpp_objects.PATHS}
    if all(_a_path(path) for path in paths.values()):  # a capture before paths were recorded: none
        cpp_objects.find_under_captured_paths(
            {name: str(path) for name, path in paths.items()}, objects or {}
        )
    from torch._inductor.codecache import torch_key

    setter = getattr(torch_key, "set", None)
    with contextlib.suppress(AssertionError, RuntimeError):  # computed already: 2.11 asserts, later raises
        if callable(setter):
            setter(bytes.fromhex(value))
            _served[0] = True


def served() -> bool:
    """Whether this process took Inductor's torch source hash from a bundle."""
    return _served[0]


def serve_when_imported(entries: list[model.Entry], objects: Mapping[str, str]) -> None:
    """`serve(entries, objects)` once Inductor's cache code is imported: before Inductor first computes the
    hash."""
    from tuned_kernels.post_import import when_imported

    when_imported("torch._inductor.codecache", lambda _: serve(entries, objects))
