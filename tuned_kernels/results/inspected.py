"""What `tuned-kernels inspect NAME` reads: NAME may be a results file, a folder of them (and of wheels), a bundle wheel
(`.whl`: the results files inside it, read from the archive with the same bounds as from disk) or the name
of an installed bundle package (`app-tuned-cpu`, as pip lists it). I/O only to list and read."""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path

from tuned_kernels import model
from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.results.files import MAX_DECODED_BYTES, decode_results, read_results
from tuned_kernels.results.locate import results_files_in

MAX_WHEEL_MEMBERS = 1_000
RESULTS_MEMBER = re.compile(r"[^/]+/bundles/[^/]+\.(textproto|pb|binpb)(\.zst)?")
BUNDLE_MEMBER = re.compile(r"[^/]+/bundles/[^/]+\.(textproto|pb|binpb)(\.zst)?(\.sig)?")


def results_named(name: str) -> list[tuple[str, model.Results]]:
    """Each results file `name` stands for, read: (where it was found, its contents)."""
    path = Path(name)
    if path.suffix == ".whl" and path.is_file():
        return _in_wheel(path)
    if path.is_dir():
        files = results_files_in(path)
        wheels = sorted(w for w in path.glob("*.whl") if w.is_file())
        if not files and not wheels:
            raise TunedKernelsError(f"{name}: a folder with no results files or bundle wheels in it")
        return [(str(f), read_results(f)) for f in files] + [found for w in wheels for found in _in_wheel(w)]
    if path.exists() or os.sep in name or "." in path.name:
        return [(name, read_results(name))]
    return _installed(name)


def _in_wheel(wheel: Path) -> list[tuple[str, model.Results]]:
    found = [
        (f"{wheel}!{name}", decode_results(data, name))
        for name, data in wheel_bundle_files(wheel)
        if RESULTS_MEMBER.fullmatch(name)
    ]
    if not found:
        raise TunedKernelsError(f"{wheel}: holds no bundle (not made by tuned-kernels build-wheel)")
    return found


def wheel_bundle_files(wheel: Path) -> list[tuple[str, bytes]]:
    """The files in a bundle wheel's `bundles/` folder (results files and their signatures), by their name in
    the archive, read with the same bounds as from disk."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = archive.infolist()
            if len(members) > MAX_WHEEL_MEMBERS:
                raise TunedKernelsError(f"{wheel}: more than {MAX_WHEEL_MEMBERS} files: not a bundle wheel")
            found = []
            for member in (m for m in members if BUNDLE_MEMBER.fullmatch(m.filename)):
                if member.file_size > MAX_DECODED_BYTES:
                    raise TunedKernelsError(
                        f"{wheel}!{member.filename}: larger than {MAX_DECODED_BYTES} bytes"
                    )
                found.append((member.filename, archive.read(member)))
    except zipfile.BadZipFile as exc:
        raise TunedKernelsError(f"{wheel}: not a wheel ({exc})") from None
    return found


def _installed(name: str) -> list[tuple[str, model.Results]]:
    from tuned_kernels.results.discovery import discover

    wanted = _normal(name)
    files = [f for f in discover().files if _normal(f.source.split(" ")[0]) == wanted]
    if not files:
        raise TunedKernelsError(
            f"{name}: no such results file, folder, wheel or installed bundle (`tuned-kernels status` lists "
            "the installed ones)"
        )
    return [(str(f.path), read_results(f.path)) for f in files]


def _normal(distribution: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", distribution).lower()
