"""The results format: a versioned protobuf schema, its codec and the one reader and writer of files.

The names below are imported when first used: the reader pulls in protobuf and zstandard (about 15 ms),
which serving at start-up would otherwise pay on the program's own thread."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuned_kernels.results.files import open_results, read_results, write_results
    from tuned_kernels.results.merge import merge_results

_WHERE = {
    "open_results": "tuned_kernels.results.files",
    "read_results": "tuned_kernels.results.files",
    "write_results": "tuned_kernels.results.files",
    "merge_results": "tuned_kernels.results.merge",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'tuned_kernels.results' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_WHERE[name]), name)


__all__ = ["merge_results", "open_results", "read_results", "write_results"]
