"""What Triton says about its compiler: its own build key and a backend's hash for a GPU target (ptxas
version and arch on NVIDIA; target and codegen revision on AMD), for the compiler fingerprint."""

from __future__ import annotations

from typing import Any


def triton_key() -> str:
    """Triton's version plus hashes of its compiler, backends, language and libtriton."""
    try:
        from triton.runtime.cache import triton_key as key_of
    except ImportError:  # older layouts kept it in the compiler module
        from triton.compiler.compiler import triton_key as key_of  # type: ignore[no-redef,attr-defined,unused-ignore]
    key: str = key_of()
    return key


def gpu_target(backend: str, arch: int | str, warp_size: int) -> Any:
    """Triton's `GPUTarget` for a GPU that need not be here."""
    from triton.backends.compiler import GPUTarget

    return GPUTarget(backend, arch, warp_size)


def backend_hash(backend: str, arch: int | str, warp_size: int) -> str:
    from triton.compiler.compiler import make_backend

    try:
        return str(make_backend(gpu_target(backend, arch, warp_size)).hash())
    except Exception as exc:  # a backend whose tools are missing still gets a stable, explicit fingerprint
        return f"unavailable:{arch}:{type(exc).__name__}"


def triton_cache_dir() -> str:
    """Where Triton keeps compiled kernels and host modules (TRITON_CACHE_DIR, else ~/.triton/cache)."""
    from triton import knobs

    return str(knobs.cache.dir)


def c_compiler() -> str | None:
    """The C compiler Triton builds its host modules and launchers with, found as Triton finds it (CC,
    else clang, else gcc); None when there is none."""
    import os
    import shutil

    return os.environ.get("CC") or shutil.which("clang") or shutil.which("gcc")
