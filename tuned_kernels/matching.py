"""Which results fit which target and compiler, and why not. Pure.

A reason is a short phrase meant for a log line: `built for sm80`, `built with triton 3.8.0, running 3.9.0`.
"""

from __future__ import annotations

from tuned_kernels.model import CompilerFingerprint, Target


def target_mismatch(built: Target, running: Target, against: str = "running") -> str | None:
    if built.arch != running.arch:
        return f"built for {built.arch}, {against} {running.arch}"
    return None


def compiler_mismatch(
    built: CompilerFingerprint, running: CompilerFingerprint, against: str = "running"
) -> str | None:
    if built.triton_version != running.triton_version:
        return f"built with triton {built.triton_version}, {against} {running.triton_version}"
    if built.triton_hash != running.triton_hash:
        return (
            f"built with another build of triton {built.triton_version} "
            f"(hash {built.triton_hash[:12]}, {against} {running.triton_hash[:12]})"
        )
    if built.backend_hash != running.backend_hash:
        return f"built with another backend compiler ({_versions(built)}, {against} {_versions(running)})"
    return None


def _versions(fp: CompilerFingerprint) -> str:
    return ", ".join(f"{k} {v}" for k, v in fp.backend_versions) or f"backend {fp.backend_hash[:12]}"
