"""Which compiled torch.compile graphs the selected bundles offer this machine: only those made for exactly
this target, compiler and torch (a graph is code Inductor loads), from bundles the user installed or named,
and not when `TUNED_KERNELS_COMPILED=0`. What is not offered is said once per bundle, with the reason;
`place_graphs` puts what is offered into Inductor's cache directory."""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock, Timeout

from tuned_kernels import model
from tuned_kernels.errors import TunedKernelsError, one_line
from tuned_kernels.inductor_edge import frames, graphs, placed_record, source_key, unloadable

if TYPE_CHECKING:  # the reader is imported when the registry loads, not before
    from tuned_kernels.registry.stats import Stats

    from tuned_kernels.results.view import ResultsView


@dataclass(frozen=True)
class GraphFile:
    entry: model.Entry
    blob: graphs.BlobLookup  # its bundle's file contents, read from the message one at a time
    source: str  # the bundle's name
    path: str  # its results file


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
        offered += [
            GraphFile(e, view.blob, name, view.path)
            for e in named
            if e.kernel.source_hash == ours.source_hash
        ]
    return offered


def torch_keys(bundles: list[tuple[str, ResultsView]]) -> list[model.Entry]:
    """The torch source hashes these (selected) bundles recorded for this torch (source_key.py)."""
    ours = source_key.identity()
    found: list[model.Entry] = []
    for _, view in bundles:
        if ours.source_hash in view.source_hashes(source_key.NAME):
            with contextlib.suppress(TunedKernelsError):  # an unreadable entry: Inductor computes the hash
                found += [e for e in view.entries_named(source_key.NAME) if e.kernel == ours]
    return found


def cpp_objects(offered: Sequence[GraphFile]) -> dict[str, str]:
    """The C++ objects among `offered`: each one's path in Inductor's cache directory and its sha256."""
    return {
        str(f.entry.key[0]): f.entry.artifacts[0].files[0].sha256
        for f in offered
        if dict(f.entry.best.kwargs).get(graphs.KIND) == "cpp"
        and f.entry.artifacts
        and f.entry.artifacts[0].files
    }


def _kind(offered: GraphFile) -> object:
    return dict(offered.entry.best.kwargs).get(graphs.KIND)


def frames_offered(offered: Sequence[GraphFile]) -> list[frames.Offered]:
    """The Dynamo frames among `offered`, each read from its bundle when its function is first called and
    checked then as a graph file is (graphs.checked_file)."""
    found = []
    for f in offered:
        function = dict(f.entry.best.kwargs).get(graphs.FUNCTION)
        if _kind(f) == graphs.FRAME and isinstance(function, str):
            read = functools.partial(graphs.checked_file, f.entry, f.blob)
            found.append(frames.Offered(function, read, f.source))
    return found


def place_graphs(
    offered: Sequence[GraphFile],
    cache_dir: Path,
    known: Collection[str],
    stats: Stats,
    problem: Callable[[str], None],
) -> None:
    """Puts `offered` into Inductor's cache directory where no file is, counted in `stats`, and takes out
    the files placed by earlier runs from bundles that are gone or, found here (`known`), offer them no
    more (placed_record.py); a file that fails its checks is said once per bundle and left out, an
    unwritable directory once (Inductor compiles). Dynamo frames are not files of Inductor's: `frames_offered`."""
    offered = [f for f in offered if _kind(f) != graphs.FRAME]
    stats.watched_inductor_cache = (
        str(cache_dir),
        time.time(),
        frozenset(str(f.entry.key[0]) for f in offered),
    )
    if not offered and not (cache_dir / placed_record.RECORD).exists():
        return
    try:
        with FileLock(str(cache_dir / f"{placed_record.RECORD}.lock"), timeout=placed_record.LOCK_SECONDS):
            kept = {str(f.entry.key[0]): f.entry.artifacts[0].files[0].sha256 for f in offered}
            record, removed = placed_record.take_out(
                cache_dir, placed_record.read_record(cache_dir), kept, known
            )
            stats.graph_files_removed += removed
            _place(offered, cache_dir, stats, problem, record)
            placed_record.write_record(cache_dir, record)
            _watch_loads(cache_dir, record, stats, problem)
    except Timeout:  # another process holds it for long: serve without the record (nothing is taken out)
        _place(offered, cache_dir, stats, problem, {})
    except OSError as exc:  # a read-only or full cache directory: Inductor compiles as usual
        problem(f"cannot write Inductor's cache: {one_line(str(exc))}; Inductor compiles the graphs")


def _place(
    offered: Sequence[GraphFile],
    cache_dir: Path,
    stats: Stats,
    problem: Callable[[str], None],
    record: dict[str, str],
) -> None:
    by_file: dict[str, list[GraphFile]] = {}
    for f in offered:
        by_file.setdefault(f.path, []).append(f)
    for path, files in by_file.items():
        source = files[0].source
        placed = graphs.install(((f.entry, f.blob) for f in files), cache_dir)
        record.update({rel: placed_record.entry(sha, path) for rel, sha in placed.files.items()})
        stats.graph_files_placed += placed.written
        stats.graph_files_present += placed.present
        stats.graph_files_refused += len(placed.refused)
        if placed.refused:
            more = f" (and {len(placed.refused) - 1} more)" if len(placed.refused) > 1 else ""
            problem(f"compiled graph from {source}: {placed.refused[0]}{more}; Inductor compiles it")


def _watch_loads(
    cache_dir: Path, record: dict[str, str], stats: Stats, problem: Callable[[str], None]
) -> None:
    """A placed file Inductor then cannot load is said once, naming its bundle, instead of Inductor's
    traceback (and counts as refused: that is why the graph compiles)."""
    ours = {
        os.path.join(cache_dir, relative): Path(placed.partition(" ")[2]).name
        for relative, placed in record.items()
    }

    def say(message: str) -> None:
        stats.graph_files_refused += 1
        problem(message)

    unloadable.watch(ours.get, say)
