"""Which compiled torch.compile graphs the selected bundles offer this machine: only those made for exactly
this target, compiler and torch (a graph is code Inductor loads), from bundles the user installed or named,
and not when `TUNED_KERNELS_COMPILED=0`. What is not offered is said once per bundle, with the reason."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tuned_kernels import model
from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.inductor_edge import graphs

if TYPE_CHECKING:  # the reader is imported when the registry loads, not before
    from tuned_kernels.results.view import ResultsView


@dataclass(frozen=True)
class GraphFile:
    entry: model.Entry
    blob: graphs.BlobLookup  # its bundle's file contents, read from the message one at a time
    source: str  # the bundle's name


def graphs_fit(header: model.Header, target: model.Target, compiler: model.CompilerFingerprint) -> str | None:
    """Why a bundle's graphs must not be served here (None: they may): they were made for exactly one
    target and compiler."""
    if header.target.arch != target.arch:
        return f"made for {header.target.arch}, this machine is {target.arch}"
    if header.compiler.compiler_id != compiler.compiler_id:
        return f"made with {header.compiler.describe()}"
    return None


def graph_files(
    bundles: list[tuple[str, ResultsView]],
    target: model.Target,
    compiler: model.CompilerFingerprint,
    on_problem: Callable[[str], None],
) -> list[GraphFile]:
    """The graph files of these (selected) bundles that may be served here, best bundle first."""
    ours = graphs.identity()
    offered = []
    for name, view in bundles:
        hashes = view.source_hashes(graphs.NAME)
        if not hashes:
            continue
        why = graphs_fit(view.header, target, compiler)
        if why is None and ours.source_hash not in hashes:
            why = f"made with another torch (this is {compiler.torch_version or 'unknown'})"
        if why is not None:
            on_problem(f"not serving the compiled graphs of {name}: {why}; Inductor compiles them")
            continue
        try:
            named = view.entries_named(graphs.NAME)
        except TunedKernelsError as exc:
            on_problem(f"not serving the compiled graphs of {name}: {exc}")
            continue
        offered += [GraphFile(e, view.blob, name) for e in named if e.kernel.source_hash == ours.source_hash]
    return offered
