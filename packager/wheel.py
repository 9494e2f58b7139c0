"""Bundle wheels: `<publisher>-<arch>` (`tuned-kernels-sm90` by default), a pure-Python data wheel holding one
zstd bundle per compiler. A team or kernel library publishes under its own name (`build-wheel --name
acme-tuned`), so its wheel installs beside ours and both are found through the entry point group.

Version scheme: one wheel per target holds a bundle for every compiler version it was tuned with, and
declares no dependency on triton, so `pip install tuned-kernels-sm90` never changes the user's Triton; at
run time the registry picks the bundle whose fingerprint matches the installed Triton (and explains why the
others do not fit). Bumping Triton means publishing a new wheel version that adds a bundle, keeping the old.

Wheels are reproducible: sorted entries, fixed timestamps (SOURCE_DATE_EPOCH or 1980-01-01), a RECORD of
sha256 hashes. Building is pure (`wheel_files`, `wheel_bytes`); only `build_wheels` touches the disk.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import os
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tuned_kernels import model
from tuned_kernels.errors import BundleError
from tuned_kernels.naming import (
    DEFAULT_PUBLISHER,
    ENTRY_POINT_GROUP,
    bundle_file_name,
    distribution_name,
    entry_point_name,
    module_name,
)
from tuned_kernels.results import read_results
from tuned_kernels.results.files import encode_results, write_atomic
from tuned_kernels.results.merge import join
from tuned_kernels.version import TOOL_VERSION


@dataclass(frozen=True)
class BundleWheel:
    arch: str
    version: str
    bundles: tuple[tuple[str, bytes], ...]  # (file name, zstd-compressed results), sorted
    publisher: str = DEFAULT_PUBLISHER
    signatures: tuple[tuple[str, bytes], ...] = ()  # (file name, signature file) per bundle, when signed

    @property
    def distribution(self) -> str:
        return distribution_name(self.arch, self.publisher)

    @property
    def module(self) -> str:
        return module_name(self.arch, self.publisher)

    @property
    def filename(self) -> str:
        return f"{self.distribution.replace('-', '_')}-{self.version}-py3-none-any.whl"


def plan_wheels(
    results: Sequence[model.Results], version: str, publisher: str = DEFAULT_PUBLISHER
) -> list[BundleWheel]:
    """One wheel per target arch; within it, one bundle per compiler (entries of equal compilers merged)."""
    groups: dict[str, dict[str, list[model.Results]]] = {}
    for r in results:
        groups.setdefault(r.header.target.arch, {}).setdefault(r.header.compiler.compiler_id, []).append(r)
    wheels = []
    for arch, by_compiler in sorted(groups.items()):
        bundles = []
        for same in by_compiler.values():
            newest = max(same, key=lambda r: r.header.created_at)
            merged = join(newest.header, same)
            name = bundle_file_name(newest.header.compiler)
            bundles.append((name, encode_results(merged, name)))
        wheels.append(BundleWheel(arch, version, tuple(sorted(bundles)), publisher))
    return wheels


def _metadata(wheel: BundleWheel) -> str:
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {wheel.distribution}\n"
        f"Version: {wheel.version}\n"
        f"Summary: Tuned Triton kernel configs for {wheel.arch}, one bundle per compiler version\n"
        "Requires-Python: >=3.10\n"
        f"Requires-Dist: tuned-kernels>={TOOL_VERSION.split('+')[0]}\n"
        "Description-Content-Type: text/markdown\n\n"
        f"# {wheel.distribution}\n\nBundles: {', '.join(n for n, _ in wheel.bundles)}.\n"
        "Installed next to `tuned-kernels`, they are found through the `tuned_kernels.bundles` entry point.\n"
    )


def wheel_files(wheel: BundleWheel) -> list[tuple[str, bytes]]:
    """Every file of the wheel but RECORD, sorted."""
    dist_info = f"{wheel.distribution.replace('-', '_')}-{wheel.version}.dist-info"
    init = (
        f'"""Tuned kernel bundles for {wheel.arch}; found by tuned-kernels through an entry point."""\n\n'
        'from pathlib import Path\n\nBUNDLE_DIR = Path(__file__).parent / "bundles"\n'
    )
    files = [(f"{wheel.module}/__init__.py", init.encode())]
    files += [(f"{wheel.module}/bundles/{name}", data) for name, data in (*wheel.bundles, *wheel.signatures)]
    files += [
        (f"{dist_info}/METADATA", _metadata(wheel).encode()),
        (
            f"{dist_info}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: tuned-kernels\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        ),
        (
            f"{dist_info}/entry_points.txt",
            f"[{ENTRY_POINT_GROUP}]\n{entry_point_name(wheel.arch, wheel.publisher)} = {wheel.module}\n".encode(),
        ),
        (f"{dist_info}/top_level.txt", f"{wheel.module}\n".encode()),
    ]
    return sorted(files)


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_bytes(wheel: BundleWheel, epoch: int) -> bytes:
    files = wheel_files(wheel)
    dist_info = f"{wheel.distribution.replace('-', '_')}-{wheel.version}.dist-info"
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n" for name, data in files)
    record += f"{dist_info}/RECORD,,\n"
    files.append((f"{dist_info}/RECORD", record.encode()))
    stamp = time.gmtime(max(epoch, 315532800))[:6]  # zip cannot go before 1980
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buffer.getvalue()


def valid_version(version: str) -> str:
    from packaging.version import InvalidVersion, Version

    try:
        return str(Version(version))
    except InvalidVersion:
        raise BundleError(f"--version {version!r} is not a PEP 440 version") from None


def signed(wheel: BundleWheel, private_pem: bytes) -> BundleWheel:
    """`wheel` with a signature file beside each bundle (tuned_kernels.signing)."""
    from tuned_kernels.signing import SUFFIX, sign

    signatures = tuple(
        (
            name + SUFFIX,
            sign(name, len(data), hashlib.sha256(data).hexdigest(), private_pem).to_json().encode(),
        )
        for name, data in wheel.bundles
    )
    return dataclasses.replace(wheel, signatures=signatures)


def build_wheels(
    result_paths: Sequence[str],
    out_dir: Path,
    version: str,
    publisher: str = DEFAULT_PUBLISHER,
    sign_key: bytes | None = None,
) -> list[Path]:
    if not result_paths:
        raise BundleError("no results files given")
    results = [read_results(p) for p in result_paths]
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    written = []
    for wheel in plan_wheels(results, valid_version(version), publisher):
        if sign_key is not None:
            wheel = signed(wheel, sign_key)
        path = out_dir / wheel.filename
        write_atomic(path, wheel_bytes(wheel, epoch))
        written.append(path)
    return written
