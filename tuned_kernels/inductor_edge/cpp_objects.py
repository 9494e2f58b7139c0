"""A graph's C++ objects, found where torch is installed at another path (Inductor's C++ back end).

Inductor names each C++ object it compiles by a hash of its source and its compile command, and the command
holds the install's paths: torch's headers and libraries, Python's headers and library folder. The same
program in another virtual environment asks for its objects under other names and compiles every one again,
though a bundle brought them. A capture records its install's paths beside the torch source hash
(source_key.py). Where torch was installed here from the same wheel at another path, each object Inductor
asks for is also named as the capture's paths name it; a bundle's object found under that name (placed in
this cache directory, checked as every graph file is) is copied under this install's name. The two commands
differ in those paths alone, so the object is the one Inductor would compile here: the same source, flags
and vector instructions, against the headers of the same wheel.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import sysconfig
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuned_kernels.internals import holds

PATHS = ("torch", "include", "libdir")  # what a compile command holds of an install
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
    """`command` with each of this install's paths replaced by the capture's, in one pass (the longest
    first, so that a path inside another is not replaced twice)."""
    pairs = {here[name]: there[name] for name in PATHS if here.get(name) and there.get(name)}
    moved = {path: other for path, other in pairs.items() if path != other}
    if not moved:
        return command
    pattern = re.compile("|".join(re.escape(path) for path in sorted(moved, key=len, reverse=True)))
    return pattern.sub(lambda found: moved[found.group(0)], command)


def find_under_captured_paths(there: Mapping[str, str]) -> None:
    """Has Inductor's `codecache.write` find, for each C++ object it names, the object a bundle brought under
    the name the capture's install paths `there` give it (nothing where this install's are the same)."""
    from torch._inductor import codecache

    from tuned_kernels.inductor_edge.shapes import INDUCTOR_CPP_LOAD, INDUCTOR_CPP_WRITE

    here = install_paths()
    if all(here[name] == there.get(name) for name in PATHS):
        return
    write = codecache.write
    if getattr(write, "captured_paths", None) is not None:
        return
    if not (holds(INDUCTOR_CPP_WRITE, codecache) and holds(INDUCTOR_CPP_LOAD)):
        return

    @functools.wraps(write)
    def write_finding_captured_objects(
        content: Any, extension: str, extra: str = "", hash_type: str = "code", specified_dir: str = "",
        key: str | None = None,
    ) -> tuple[str, str]:  # fmt: skip
        basename, path = write(content, extension, extra, hash_type, specified_dir, key)
        if key is None and extension.endswith("cpp") and isinstance(extra, str):
            theirs = translated(extra, here, there)
            if theirs != extra:
                with contextlib.suppress(OSError, ValueError, TypeError):  # Inductor compiles it
                    _copy_captured(codecache, (content, extension, theirs, hash_type, specified_dir), path)
        return basename, path

    write_finding_captured_objects.captured_paths = dict(there)  # type: ignore[attr-defined]
    codecache.write = write_finding_captured_objects


def _copy_captured(codecache: Any, captured: tuple[Any, str, str, str, str], path: str) -> None:
    """The object of the source at `path`, copied from the one the capture's command names, if that one is
    here and this one is not."""
    content, extension, command, hash_type, specified_dir = captured
    ours = _object_of(path)
    if os.path.exists(ours):
        return
    key = codecache.get_hash(content.strip(), command, hash_type)
    _, _, source = codecache.get_path(key, extension, specified_dir)
    theirs = _object_of(source)
    if not os.path.isfile(theirs):
        return
    folder = os.path.dirname(ours)
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".copying-", delete=False) as copy:
        temporary = copy.name
    try:
        shutil.copyfile(theirs, temporary)
        os.replace(temporary, ours)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    _copied.add(Path(ours).relative_to(Path(folder).parent).as_posix())


def _object_of(source: str) -> str:
    """The object Inductor builds from a C++ source it wrote (`<key>.cpp` -> `<key>.so`)."""
    return source[: -len("cpp")] + "so"


def copied() -> frozenset[str]:
    """The objects this process copied from a capture's name: their paths in the cache directory."""
    return frozenset(_copied)
