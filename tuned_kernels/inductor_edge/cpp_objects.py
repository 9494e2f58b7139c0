"""A graph's C++ objects, found where torch is installed at another path (Inductor's C++ back end).

Inductor names each C++ object it compiles by a hash of its source and its compile command, and the command
holds the install's paths: torch's headers and libraries, Python's headers and library folder. The same
program in another virtual environment asks for its objects under other names and compiles every one again,
though a bundle brought them. A capture records its install's paths beside the torch source hash
(source_key.py). Where torch was installed here from the same wheel at another path, each object Inductor
asks for is also named as the capture's paths name it; where a bundle offered an object of that name and
the file there holds the bundle's bytes (its sha256), those bytes are written under this install's name.
The two commands differ in those paths alone, so the object is the one Inductor would compile here: the
same source, flags and vector instructions, against the headers of the same wheel.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import re
import sysconfig
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuned_kernels.internals import holds

PATHS = ("torch", "include", "libdir")  # what a compile command holds of an install
SOURCES = ("main.cpp", "cpp")  # the sources Inductor builds a `.so` from beside them (not `optimized.cpp`)
MAX_OBJECT_BYTES = 256 << 20
_copied: set[str] = set()


def install_paths() -> dict[str, str]:
    """This install's paths as Inductor's compile commands hold them."""
    import torch

    return {
        "torch": str(Path(torch.__file__).parent),
        "include": str(sysconfig.get_paths().get("include") or ""),
        "libdir": str(sysconfig.get_config_var("LIBDIR") or ""),
    }


def translated(command: str, here: Mapping[str, str], there: Mapping[str, str]) -> str:
    """`command` with each of this install's paths replaced by the capture's where it stands as a whole path
    (followed by `/`, a space or the end), in one pass: the longest first, so a path inside another is not
    replaced twice."""
    pairs = {here[name]: there[name] for name in PATHS if here.get(name) and there.get(name)}
    moved = {path: other for path, other in pairs.items() if path != other}
    if not moved:
        return command
    alternatives = "|".join(re.escape(path) for path in sorted(moved, key=len, reverse=True))
    return re.sub(f"({alternatives})(?=/|\\s|$)", lambda found: moved[found.group(1)], command)


def find_under_captured_paths(there: Mapping[str, str], offered: Mapping[str, str]) -> None:
    """Has Inductor's `codecache.write` find, for each C++ object it names, the object a bundle offered
    (`offered`: its path in the cache directory and sha256) under the name the capture's install paths
    `there` give it. Nothing where this install's paths are the capture's, or no object was offered."""
    from torch._inductor import codecache

    from tuned_kernels.inductor_edge.shapes import INDUCTOR_CPP_LOAD, INDUCTOR_CPP_WRITE

    here = install_paths()
    if not offered or all(here[name] == there.get(name) for name in PATHS):
        return
    write = codecache.write
    if getattr(write, "captured_paths", None) is not None:
        return
    if not (holds(INDUCTOR_CPP_WRITE, codecache) and holds(INDUCTOR_CPP_LOAD)):
        return
    signature = inspect.signature(write)
    objects = dict(offered)

    @functools.wraps(write)
    def write_finding_captured_objects(*args: Any, **kwargs: Any) -> Any:
        written = write(*args, **kwargs)
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):  # Inductor compiles it
            call = signature.bind(*args, **kwargs)
            call.apply_defaults()
            _copy_captured(codecache, call.arguments, written[1], (here, there), objects)
        return written

    write_finding_captured_objects.captured_paths = dict(there)  # type: ignore[attr-defined]
    codecache.write = write_finding_captured_objects


def _copy_captured(
    codecache: Any,
    call: Mapping[str, Any],
    path: str,
    paths: tuple[Mapping[str, str], Mapping[str, str]],
    offered: Mapping[str, str],
) -> None:
    """The object of the source `path` Inductor just named, from the bundle's object the capture's paths
    name, where this one is missing and that one holds the bytes the bundle offered."""
    command = call.get("extra")
    if call.get("key") is not None or call.get("extension") not in SOURCES or not isinstance(command, str):
        return
    theirs = translated(command, *paths)
    ours = Path(_object_of(path))
    if theirs == command or ours.exists():
        return
    key = codecache.get_hash(call["content"].strip(), theirs, call["hash_type"])
    _, _, source = codecache.get_path(key, call["extension"], call["specified_dir"])
    captured = Path(_object_of(source))
    cache = ours.parent.parent
    relative = captured.relative_to(cache).as_posix()
    sha = offered.get(relative)
    if sha is None or captured.stat().st_size > MAX_OBJECT_BYTES:
        return
    data = captured.read_bytes()
    if hashlib.sha256(data).hexdigest() != sha:
        return
    from tuned_kernels.results.files import write_atomic

    write_atomic(ours, data)
    _copied.add(ours.relative_to(cache).as_posix())


def _object_of(source: str) -> str:
    """The object Inductor builds from a C++ source it wrote (`<key>.main.cpp` -> `<key>.main.so`)."""
    return source[: -len("cpp")] + "so"


def copied() -> frozenset[str]:
    """The objects this process wrote from a bundle's, named by the capture's paths: their paths in the
    cache directory."""
    return frozenset(_copied)
