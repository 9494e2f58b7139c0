"""Triton's host-side C modules, built before the program's first launches need them.

In an empty Triton cache, Triton builds small C modules with the host's C compiler: its driver utilities
(`cuda_utils`, once per install) and, up to Triton 3.6, one launcher per list of kernel argument types, at
the first launch of a kernel with that list (0.3 s each on an H100 host). A bundle's compiled kernels spare
the kernel compile but not these. `build` makes them ahead, from the C source Triton's own driver module
generates, with Triton's own compiler call, into Triton's cache under the key Triton's
`compile_module_from_src` computes, so the launch finds the file there. It only builds: loading stays
Triton's, in Triton's order (a launcher module loaded before `cuda_utils` would hold the wrong tensor-map
type). Nothing here touches the GPU (no CUDA context, so a program may still fork), and nothing built
elsewhere is ever loaded: a module is built on this host by Triton's code or not at all. A Triton laid out
otherwise (3.7 on: one generic launcher; `cuda_utils` keyed by its install's paths), or a module that cannot
be built, is left to Triton, which builds it at the launch as it always did.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import queue
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuned_kernels import model
from tuned_kernels.triton_edge.artifact_check import METADATA_SUFFIX

MAX_LAUNCHERS = 64  # distinct argument-type lists built per process (each a C compile)
# added to the builders' niceness: they and the C compilers they start yield the CPU to the program
BUILD_NICENESS = 10
MAX_METADATA_BYTES = 1 << 20  # a compiled kernel's metadata JSON larger than this is not read
_DRIVERS = {  # backend: (driver module, its utilities' module name, its launchers' module name)
    "cuda": ("triton.backends.nvidia.driver", "cuda_utils", "__triton_launcher"),
}


@dataclass(frozen=True)
class LauncherSpec:
    """What Triton generates a kernel's launcher from: its backend, its argument types in order, and the
    launch facts of its metadata (tensor-descriptor layout, scratch sizes)."""

    backend: str
    signature: tuple[str, ...]
    metadata: Mapping[str, Any]

    @property
    def identity(self) -> tuple[str, tuple[str, ...], str]:
        tensordesc = json.dumps(self.metadata.get("tensordesc_meta"), sort_keys=True)
        return self.backend, self.signature, tensordesc


@dataclass
class BuildReport:
    built: int = 0
    failed: int = 0
    first_failure: str = ""
    skipped: int = 0  # distinct launchers past MAX_LAUNCHERS, left to Triton's first launch of each


def launcher_spec(artifact: model.Artifact, blobs: Mapping[str, bytes]) -> LauncherSpec | None:
    """The launcher a compiled kernel of a bundle needs, or None where the bundle does not say (no
    recorded signature) or says it badly (metadata missing, oversized, not what its sha256 names, or not a
    JSON object)."""
    backend = artifact.gpu_target.split(":", 1)[0]
    if not artifact.host_signature or backend not in _DRIVERS:
        return None
    metadata_file = next((f for f in artifact.files if f.name.endswith(METADATA_SUFFIX)), None)
    if metadata_file is None:
        return None
    raw = blobs.get(metadata_file.sha256)
    if (
        raw is None
        or len(raw) > MAX_METADATA_BYTES
        or hashlib.sha256(raw).hexdigest() != metadata_file.sha256
    ):
        return None
    try:
        metadata = json.loads(raw)
    except ValueError:
        return None
    return LauncherSpec(backend, artifact.host_signature, metadata) if isinstance(metadata, dict) else None


def distinct(specs: Iterable[LauncherSpec], limit: int = MAX_LAUNCHERS) -> tuple[list[LauncherSpec], int]:
    """One spec per launcher Triton would build (kernels of the same argument types share one), at most
    `limit` of them (a bundle may name thousands: each is a C compile), and how many more there were."""
    seen: dict[tuple[str, tuple[str, ...], str], LauncherSpec] = {}
    over: set[tuple[str, tuple[str, ...], str]] = set()
    for spec in specs:
        if spec.identity in seen:
            continue
        if len(seen) < limit:
            seen[spec.identity] = spec
        else:
            over.add(spec.identity)
    return list(seen.values()), len(over)


def builds_ahead(backend: str) -> bool:
    """Whether this Triton's driver for `backend` builds its modules as this file knows how (Triton 3.6's
    layout: a C launcher generated per argument-type list, compiled by `compile_module_from_src`)."""
    try:
        driver = importlib.import_module(_DRIVERS[backend][0])
    except Exception:  # no such backend in this Triton
        return False
    return all(hasattr(driver, name) for name in ("make_launcher", "compile_module_from_src", "library_dirs"))


def build(specs: Sequence[LauncherSpec], jobs: int = 4) -> BuildReport:
    """Builds the driver utilities of each backend named and every launcher in `specs` (in parallel: each
    build is a C compiler process), from the C source Triton's driver generates (`compile_into_cache`);
    failures are counted, not raised. The builders are daemon threads: a program that ends meanwhile does
    not wait for them."""
    report = BuildReport()
    tasks: queue.SimpleQueue[tuple[Any, Any]] = queue.SimpleQueue()
    backends = [backend for backend in sorted({spec.backend for spec in specs}) if builds_ahead(backend)]
    for backend in backends:
        tasks.put((_build_utilities, backend))
    for spec in specs:
        if spec.backend in backends:
            tasks.put((_build_launcher, spec))
    lock = threading.Lock()

    def builder() -> None:
        _lower_priority()
        while True:
            try:
                function, argument = tasks.get_nowait()
            except queue.Empty:
                return
            error = _attempt(function, argument)
            with lock:
                report.built += error is None
                report.failed += error is not None
                report.first_failure = report.first_failure or (error or "")

    builders = [
        threading.Thread(target=builder, name="tuned-kernels-host-build", daemon=True)
        for _ in range(max(1, jobs))
    ]
    for thread in builders:
        thread.start()
    for thread in builders:
        thread.join()
    return report


def _lower_priority() -> None:
    """Lowers this thread's CPU priority (Linux schedules threads on their own; the compilers it starts
    inherit it), so that building ahead does not slow the program's own start-up. Best effort."""
    if not sys.platform.startswith("linux"):  # elsewhere a thread id is not a scheduling target
        return
    try:
        thread = threading.get_native_id()
        os.setpriority(
            os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + BUILD_NICENESS)
        )
    except (AttributeError, OSError):  # not Linux, or not allowed: build at the normal priority
        pass


def _attempt(function: Any, argument: Any) -> str | None:
    try:
        function(argument)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _build_utilities(backend: str) -> None:
    module, name, _ = _DRIVERS[backend]
    driver = importlib.import_module(module)
    with open(os.path.join(os.path.dirname(driver.__file__ or ""), "driver.c")) as f:
        compile_into_cache(f.read(), name, driver)


def _build_launcher(spec: LauncherSpec) -> None:
    """The launcher Triton's `CudaLauncher` builds for a compiled kernel: its driver's C source for these
    argument types and tensor descriptors."""
    module, _, name = _DRIVERS[spec.backend]
    driver = importlib.import_module(module)
    signature = dict(enumerate(spec.signature))
    compile_into_cache(
        driver.make_launcher({}, signature, spec.metadata.get("tensordesc_meta")), name, driver
    )


def compile_into_cache(src: str, name: str, driver: Any) -> None:
    """What Triton's `compile_module_from_src` does, but the load: the module `name` compiled from `src`
    with the driver's libraries into Triton's cache, under Triton's key for it (unless already there)."""
    from triton.runtime import build
    from triton.runtime.cache import get_cache_manager

    key = hashlib.sha256((src + build.platform_key()).encode("utf-8")).hexdigest()
    cache = get_cache_manager(key)
    file_name = f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    if cache.get_file(file_name) is not None:
        return
    with tempfile.TemporaryDirectory() as tmp:
        src_path = os.path.join(tmp, f"{name}.c")
        with open(src_path, "w") as f:
            f.write(src)
        libraries = (driver.library_dirs(), driver.include_dirs, driver.libraries)
        so = build._build(name, src_path, tmp, *libraries, [])
        with open(so, "rb") as f:
            cache.put(f.read(), file_name, binary=True)
