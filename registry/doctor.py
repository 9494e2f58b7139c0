"""`tuned-kernels doctor`: whether serving can work in this environment, as one screen a user pastes into a
bug report. Each check is ok, warn (serving works, with less) or fail (serving cannot work here)."""

from __future__ import annotations

import os
import platform
import site
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from tuned_kernels.errors import TunedKernelsError, one_line, printable
from tuned_kernels.version import TOOL_VERSION

Status = Literal["ok", "warn", "fail"]
AUTOLOAD_FILE = "tuned_kernels.pth"


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str


def checks() -> list[Check]:
    """Every check, in the order a reader follows: what runs here, whether tuned-kernels can switch on,
    what it would serve, where it writes."""
    found = [_versions(), _autoload(), *_serving(), _c_compiler_check()]
    return [*found, _variables(), *_settings_problems()]


def _versions() -> Check:
    versions = [f"tuned-kernels {TOOL_VERSION}", f"Python {platform.python_version()} ({sys.executable})"]
    status: Status = "ok"
    for name in ("torch", "triton"):
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} missing")
            status = "fail"
    return Check("versions", status, ", ".join(versions))


def _autoload() -> Check:
    """Whether `TUNED_KERNELS=1` takes effect in this interpreter: our .pth in a folder Python reads .pth
    files from (a wheel and an editable install both put it there)."""
    folders = [*site.getsitepackages(), site.getusersitepackages()]
    for folder in folders:
        pth = Path(folder) / AUTOLOAD_FILE
        if pth.is_file():
            return Check("autoload", "ok", f"TUNED_KERNELS=1 takes effect here ({pth})")
    return Check(
        "autoload",
        "warn",
        f"no {AUTOLOAD_FILE} in {', '.join(folders)}: TUNED_KERNELS=1 does nothing here (tuned_kernels.enable() "
        "still works); reinstall with pip install . or pip install -e .",
    )


def _serving() -> list[Check]:
    from tuned_kernels.hardware.probe import interpret_without_gpu
    from tuned_kernels.registry.runtime import Registry
    from tuned_kernels.registry.settings import Settings

    try:
        interpret_without_gpu()
        registry = Registry(Settings.from_environ(os.environ))
        summary = registry.summary(
            quiet=True
        )  # each problem is a line of this report, not a warning beside it
    except (TunedKernelsError, ImportError, RuntimeError) as exc:
        return [Check("target", "fail", one_line(f"{type(exc).__name__}: {exc}"))]
    target = registry.load().target
    if target is None:  # an unknown TUNED_KERNELS_TARGET, a GPU Triton does not know ...
        return [Check("target", "fail", "; ".join(summary["problems"]) or "this machine's target is unknown")]
    where = "no GPU: kernels run through Triton's interpreter" if target.arch == "cpu" else target.device_name
    found = [
        Check("target", "ok", f"{target.arch} ({where})"),
        Check("compiler", "ok", str(summary["compiler"])),
        *_bundles(summary, target.arch),
        _overlay(Path(summary["overlay"]["path"]), sum(summary["overlay"]["entries_per_kernel"].values())),
    ]
    if target.arch != "cpu":
        found.append(_triton_cache())
    return found


def _bundles(summary: dict[str, Any], arch: str) -> list[Check]:
    from tuned_kernels.naming import distribution_name

    selected, rejected, entries = summary["selected"], summary["rejected"], summary["bundle_entries"]
    found = [
        Check("bundle", "ok", f"{s['bundle']}: {entries.get(s['file'], 0)} entries ({s['file']})")
        for s in selected
    ]
    found += [Check("bundle", "warn", f"{r['bundle']} not used: {r['reason']}") for r in rejected]
    if not selected:
        found.append(
            Check(
                "bundles",
                "warn",
                f"none for this GPU and compiler: pip install {distribution_name(arch)}, "
                "or set TUNED_KERNELS_PATH to your results files; until then misses are tuned here",
            )
        )
    return found


def _overlay(path: Path, entries: int) -> Check:
    """The per-user cache misses are tuned into: remembered across processes only if writable."""
    problem = _unwritable(path.parent)
    if problem:
        return Check(
            "overlay", "warn", f"{path.parent} is not writable ({problem}): misses are tuned in every process"
        )
    return Check("overlay", "ok", f"{path} ({entries} entries, writable)")


def _triton_cache() -> Check:
    from tuned_kernels.triton_edge.compiler_facts import triton_cache_dir

    folder = Path(triton_cache_dir())
    problem = _unwritable(folder)
    if problem:
        return Check(
            "triton cache", "fail", f"{folder} is not writable ({problem}): Triton cannot load kernels"
        )
    return Check("triton cache", "ok", f"{folder} (writable)")


def _c_compiler_check() -> Check:
    from tuned_kernels.triton_edge.compiler_facts import c_compiler
    from tuned_kernels.triton_edge.interpreter import interpreting

    cc = c_compiler()
    if cc:
        return Check("C compiler", "ok", f"{cc} (Triton builds its launchers with it)")
    if interpreting():
        return Check("C compiler", "ok", "none, and none needed: the interpreter builds nothing")
    return Check(
        "C compiler", "fail", "none found (CC, clang, gcc): Triton cannot build its launchers; set CC"
    )


def _variables() -> Check:
    """The variables the user set (TRITON_INTERPRET only if they set it, not tuned-kernels for want of a GPU)."""
    from tuned_kernels.triton_edge.interpreter import INTERPRET_ENV, turned_on_here

    prefixes = ("TUNED_KERNELS", "TRITON_INTERPRET", "TRITON_CACHE")
    names = [
        k
        for k in sorted(os.environ)
        if k.startswith(prefixes) and not (k == INTERPRET_ENV and turned_on_here())
    ]
    said = ", ".join(f"{k}={one_line(os.environ[k], 80)}" for k in names) or "none set"
    return Check("environment", "ok", said)


def _settings_problems() -> list[Check]:
    """One failed check per setting that cannot be honoured as set."""
    from tuned_kernels.registry.environment_check import environment_problems

    return [Check("setting", "fail", problem) for problem in environment_problems(os.environ)]


def _unwritable(folder: Path) -> str | None:
    """Why a file cannot be made in `folder` (made if missing), or None when it can."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".doctor-"):
            pass
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def report(found: list[Check]) -> str:
    width = max(len(c.name) for c in found)
    return "\n".join(f"{c.status:<4}  {c.name:<{width}}  {printable(c.detail)}" for c in found)


def serving_works(found: list[Check]) -> bool:
    return all(c.status != "fail" for c in found)
