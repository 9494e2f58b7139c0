"""A PEP 503 simple index of bundle wheels, with sha256 fragments, for any static file host."""

from __future__ import annotations

import hashlib
import html
import re
import shutil
import zipfile
from pathlib import Path

from tuned_kernels.errors import BundleError
from tuned_kernels.results.files import write_atomic


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project_of(wheel: Path) -> str:
    return normalize(wheel.name.split("-", 1)[0])


def _page(title: str, links: list[tuple[str, str]]) -> bytes:
    body = "\n".join(
        f'    <a href="{html.escape(href)}">{html.escape(text)}</a><br/>' for href, text in links
    )
    return (
        f'<!DOCTYPE html>\n<html>\n  <head><meta name="pypi:repository-version" content="1.0">'
        f"<title>{html.escape(title)}</title></head>\n  <body>\n{body}\n  </body>\n</html>\n"
    ).encode()


def write_index(dist: Path, out: Path) -> list[str]:
    """Copies every wheel of `dist` into `out/<project>/` and writes the project and root pages."""
    wheels = sorted(dist.glob("*.whl"))
    if not wheels:
        raise BundleError(f"no wheels in {dist}")
    for wheel in wheels:  # before anything is written: pip would fail on it only when a user installs
        if not zipfile.is_zipfile(wheel) or wheel.name.count("-") < 4:
            raise BundleError(f"{wheel}: not a wheel (a zip file named NAME-VERSION-PY-ABI-PLATFORM.whl)")
    projects: dict[str, list[Path]] = {}
    for wheel in wheels:
        projects.setdefault(project_of(wheel), []).append(wheel)
    for project, files in sorted(projects.items()):
        folder = out / project
        folder.mkdir(parents=True, exist_ok=True)
        links = []
        for wheel in files:
            shutil.copyfile(wheel, folder / wheel.name)
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            links.append((f"{wheel.name}#sha256={digest}", wheel.name))
        write_atomic(folder / "index.html", _page(f"Links for {project}", links))
    write_atomic(out / "index.html", _page("Simple index", [(f"{p}/", p) for p in sorted(projects)]))
    return sorted(projects)
