"""Every name tuned-kernels gives to things, in one place. Pure.

A bundle wheel is `<publisher>-<arch>` (default publisher `tuned-kernels`, so `tuned-kernels-sm90`), its
module `<publisher>_bundle_<arch>` and its entry point `<publisher>-<arch>` in `ENTRY_POINT_GROUP`; each
compiler's bundle inside it is `triton-<version>-<compiler digest>.pb.zst`, and the per-user overlay
`overlay-<arch>-triton<version>-<compiler digest>.pb`. Names are built only from validated parts, so nothing
read from a results file can put a path separator, a comma or a newline into a file or wheel member name.
"""

from __future__ import annotations

import hashlib
import re

from tuned_kernels.errors import BundleError
from tuned_kernels.model import CompilerFingerprint
from tuned_kernels.whole_match import matches, whole

ENTRY_POINT_GROUP = "tuned_kernels.bundles"
DEFAULT_PUBLISHER = "tuned-kernels"
_ARCH = whole(r"[a-z0-9]{1,32}")
_PUBLISHER = whole(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,62}[A-Za-z0-9])?")  # a PEP 508 project name


def compiler_digest(compiler: CompilerFingerprint) -> str:
    """16 hex digits naming a compiler (Triton version, build and backend) in file names."""
    return hashlib.sha256(compiler.compiler_id.encode()).hexdigest()[:16]


def safe_version(version: str) -> str:
    """A Triton version fit for a file name: PEP 440, normalised; anything else is a BundleError."""
    from packaging.version import InvalidVersion, Version

    try:
        return str(Version(version))
    except InvalidVersion:
        raise BundleError(f"triton version {version[:40]!r} is not a PEP 440 version") from None


def safe_arch(arch: str) -> str:
    if not matches(_ARCH, arch):
        raise BundleError(f"cannot name a bundle for target {arch[:40]!r}")
    return arch


def normalized_publisher(publisher: str) -> str:
    """PEP 503 normalisation (`Acme.Tuned` -> `acme-tuned`); names that are not project names refused."""
    if not matches(_PUBLISHER, publisher):
        raise BundleError(f"--name {publisher[:40]!r} is not a valid project name")
    return re.sub(r"[-_.]+", "-", publisher).lower()


def distribution_name(arch: str, publisher: str = DEFAULT_PUBLISHER) -> str:
    return f"{normalized_publisher(publisher)}-{safe_arch(arch)}"


def module_name(arch: str, publisher: str = DEFAULT_PUBLISHER) -> str:
    return f"{normalized_publisher(publisher).replace('-', '_')}_bundle_{safe_arch(arch)}"


def entry_point_name(arch: str, publisher: str = DEFAULT_PUBLISHER) -> str:
    return distribution_name(arch, publisher)


def bundle_file_name(compiler: CompilerFingerprint) -> str:
    return f"triton-{safe_version(compiler.triton_version)}-{compiler_digest(compiler)}.pb.zst"


def overlay_file_name(arch: str, compiler: CompilerFingerprint) -> str:
    return f"overlay-{safe_arch(arch)}-triton{safe_version(compiler.triton_version)}-{compiler_digest(compiler)}.pb"
