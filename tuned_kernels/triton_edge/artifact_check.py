"""Whether a bundle's compiled kernel is what it says it is, before its files reach Triton's cache: Triton
trusts its own cache, so a kernel filed under another kernel's cache key, or whose metadata disagrees with
its entry or its binary, would be launched as is (the wrong kernel, or the right one with the wrong
launch). Checked here: the metadata is the kernel Triton asked for (name, cache key, target), launches as
the entry's config does (warps, stages), and names a function its binary defines, which (a cubin) was
compiled for the threads the metadata launches. A binary's machine code itself cannot be checked without
compiling it again; `TUNED_KERNELS_COMPILED=0` serves configs only."""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import Any

from tuned_kernels import model
from tuned_kernels.elf import Elf, read_elf

METADATA_SUFFIX = ".json"
BINARY_SUFFIXES = (".cubin", ".hsaco")  # what a GPU loads; the IRs beside them are not shipped
NAME_CHARS = 150  # Triton names a kernel's cache files by the first 150 characters of its name


def metadata_file_of(kernel_name: str) -> str:
    """The file Triton asks its cache for when it compiles the kernel `kernel_name`."""
    return f"{kernel_name[:NAME_CHARS]}{METADATA_SUFFIX}"


def gpu_target_of(metadata: Mapping[str, Any]) -> str:
    """The target a compiled kernel's metadata names, as an artifact records it: "cuda:90:32"."""
    target = metadata["target"]
    return f"{target['backend']}:{target['arch']}:{target['warp_size']}"


def why_not_served(artifact: model.Artifact, files: Mapping[str, bytes], asked: str) -> str | None:
    """Why the compiled kernel `files` (sha256 already checked) must not answer Triton's request for the
    metadata file `asked`, or None."""
    metadata_name = next((name for name in files if name.endswith(METADATA_SUFFIX)), "")
    try:
        metadata = json.loads(files[metadata_name])
        name, cache_key, gpu_target = str(metadata["name"]), str(metadata["hash"]), gpu_target_of(metadata)
        launch = (int(metadata["num_warps"]), int(metadata["num_stages"]))
        threads = launch[0] * int(metadata["target"]["warp_size"])
    except (KeyError, TypeError, ValueError) as exc:
        return f"its metadata cannot be read ({type(exc).__name__}: {exc})"
    if metadata_file_of(name) != asked or metadata_name != asked:
        return f"it is kernel {name!r}, filed under the cache key of {asked.removesuffix(METADATA_SUFFIX)!r}"
    if cache_key != artifact.cache_key:
        return (
            f"its metadata says cache key {cache_key[:16]}..., it is filed under {artifact.cache_key[:16]}..."
        )
    if gpu_target != artifact.gpu_target:
        return f"its metadata says target {gpu_target}, its entry {artifact.gpu_target}"
    config = artifact.config
    if launch != (config.num_warps, config.num_stages):
        return f"its metadata launches {launch[0]} warps, {launch[1]} stages; its entry {config.describe()}"
    for file_name, data in files.items():
        if file_name.endswith(BINARY_SUFFIXES):
            try:
                binary = read_elf(data)
            except ValueError as exc:
                return f"{file_name} is not a GPU binary: {exc}"
            if name not in binary.symbols:
                return f"{file_name} defines no function {name!r}"
            compiled_for = threads_per_block(binary, name)
            if compiled_for not in (None, threads):
                return f"{file_name} was compiled for {compiled_for} threads a block, its metadata launches {threads}"
    return None


_REQNTID, _MAX_THREADS = 0x10, 0x05  # a cubin's kernel attributes (EIATTR_*) naming its block size
_SIZED = 0x04  # the attribute format with a 16-bit size before its value (EIFMT_SVAL)
_FOUR_BYTES = (0x01, 0x02, 0x03)  # no value, a byte, 16 bits: each attribute 4 bytes in all


def threads_per_block(binary: Elf, kernel: str) -> int | None:
    """The block size a cubin's kernel was compiled for (its required or maximum threads, from the
    `.nv.info.<kernel>` attributes), or None where it does not say (or is not a cubin)."""
    info = binary.sections.get(f".nv.info.{kernel}", b"")
    at = 0
    while at + 4 <= len(info):
        form, attribute = info[at], info[at + 1]
        if form in _FOUR_BYTES:
            at += 4
        elif form == _SIZED:
            (size,) = struct.unpack_from("<H", info, at + 2)
            value = info[at + 4 : at + 4 + size]
            if attribute in (_REQNTID, _MAX_THREADS) and len(value) == 12:
                x, y, z = struct.unpack("<III", value)
                return int(x * y * z)
            at += 4 + size
        else:  # a format whose length is not read here: what follows is not known
            return None
    return None


# what a compiled kernel's metadata records of the kernel and its config, not of how Triton was set up (and
# extern_libs: library paths, which differ by install; Triton keys their contents)
_NOT_A_SETTING = frozenset(
    {"hash", "name", "num_warps", "num_stages", "num_ctas", "maxnreg", "shared", "tmem_size", "n_regs",
     "n_spills", "global_scratch_size", "global_scratch_align", "profile_scratch_size", "profile_scratch_align",
     "tensordesc_meta", "cluster_dims", "ir_override", "extern_libs"}
)  # fmt: skip


def settings_apart(held: Mapping[str, Any], compiled: Mapping[str, Any]) -> list[str]:
    """The compile settings (`enable_fp_fusion`, `debug`, ...) in which a bundle's compiled kernel and one
    Triton compiled here of the same kernel differ: "enable_fp_fusion True in the bundle, False here" each."""
    unset = "unset"
    return [
        f"{key} {held.get(key, unset)!r} in the bundle, {compiled.get(key, unset)!r} here"
        for key in sorted((held.keys() | compiled.keys()) - _NOT_A_SETTING)
        if held.get(key, unset) != compiled.get(key, unset)
    ]
