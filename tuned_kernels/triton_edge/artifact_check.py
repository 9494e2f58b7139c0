"""Whether a bundle's compiled kernel is what it says it is, before its files reach Triton's cache: Triton
trusts its own cache, so a kernel filed under another kernel's cache key, or whose metadata disagrees with
its entry or its binary, would be launched as is (the wrong kernel, or the right one with the wrong
launch). Checked here: the metadata is the kernel Triton asked for (name, cache key, target), launches as
the entry's config does (warps, stages), and names a function its binary defines. A binary's machine code
itself cannot be checked without compiling it again; `TUNED_KERNELS_COMPILED=0` serves configs only."""

from __future__ import annotations

import json
from collections.abc import Mapping

from tuned_kernels import model
from tuned_kernels.elf_symbols import defined_symbols

METADATA_SUFFIX = ".json"
BINARY_SUFFIXES = (".cubin", ".hsaco")  # what a GPU loads; the IRs beside them are not shipped
NAME_CHARS = 150  # Triton names a kernel's cache files by the first 150 characters of its name


def metadata_file_of(kernel_name: str) -> str:
    """The file Triton asks its cache for when it compiles the kernel `kernel_name`."""
    return f"{kernel_name[:NAME_CHARS]}{METADATA_SUFFIX}"


def why_not_served(artifact: model.Artifact, files: Mapping[str, bytes], asked: str) -> str | None:
    """Why the compiled kernel `files` (sha256 already checked) must not answer Triton's request for the
    metadata file `asked`, or None."""
    metadata_name = next((name for name in files if name.endswith(METADATA_SUFFIX)), "")
    try:
        metadata = json.loads(files[metadata_name])
        name, cache_key, target = str(metadata["name"]), str(metadata["hash"]), metadata["target"]
        gpu_target = f"{target['backend']}:{target['arch']}:{target['warp_size']}"
        launch = (int(metadata["num_warps"]), int(metadata["num_stages"]))
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
                defined = defined_symbols(data)
            except ValueError as exc:
                return f"{file_name} is not a GPU binary: {exc}"
            if name not in defined:
                return f"{file_name} defines no function {name!r}"
    return None
