"""Merging results: the union of shard files, the faster entry winning per slot. Pure.

Merge is associative, commutative and idempotent over entries, and its output order is fixed, so the same
shards merged in any order give byte-identical files. `carry_over` moves entries stored under kernels'
previous identities (files made before identity by source) to their current ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from tuned_kernels import model
from tuned_kernels.errors import MergeConflictError
from tuned_kernels.matching import compiler_mismatch, target_mismatch


def better(a: model.Entry, b: model.Entry) -> model.Entry:
    """The faster of two entries for one slot; ties broken by content so the choice is order-independent."""
    ta, tb = a.best_time_ms, b.best_time_ms
    if ta != tb:
        return a if ta < tb else b
    return a if repr(a) <= repr(b) else b


def merge_entries(groups: Iterable[Iterable[model.Entry]]) -> tuple[model.Entry, ...]:
    best: dict[model.EntrySlot, model.Entry] = {}
    for entries in groups:
        for entry in entries:
            held = best.get(entry.slot)
            best[entry.slot] = entry if held is None else better(held, entry)
    return tuple(sorted(best.values(), key=model.entry_sort_key))


def join(header: model.Header, parts: Iterable[model.Results]) -> model.Results:
    """The merged entries of `parts` under `header`, with the artifact blobs the winners name."""
    parts = list(parts)
    blobs: dict[str, bytes] = {}
    for part in parts:
        blobs.update(part.blobs)
    entries = merge_entries(p.entries for p in parts)
    return model.Results(header, entries, model.referenced_blobs(entries, blobs))


def merge_results(
    inputs: Sequence[tuple[str, model.Results]],
    *,
    allow_mixed: bool = False,
    created_at: str,
    tool_version: str,
) -> model.Results:
    """Joins named results; different targets or compilers are refused unless `allow_mixed`."""
    if not inputs:
        raise MergeConflictError("nothing to merge")
    first_name, first = inputs[0]
    if not allow_mixed:
        for name, other in inputs[1:]:
            against = f"{first_name} for"
            reason = target_mismatch(other.header.target, first.header.target, against) or compiler_mismatch(
                other.header.compiler, first.header.compiler, f"{first_name} with"
            )
            if reason:
                raise MergeConflictError(f"{name} {reason}; use --allow-mixed to force")
    header = dataclasses.replace(
        first.header, producer=model.Producer.MERGE, created_at=created_at, tool_version=tool_version
    )
    return join(header, (r for _, r in inputs))


def carry_over(results: model.Results, current: Iterable[model.KernelIdentity]) -> tuple[model.Results, int]:
    """`results` with every entry stored under one of these kernels' earlier names moved to its current
    identity, unless an entry already sits there; and how many moved. An earlier name is the kernel's
    previous identity (the older scheme's; a script's kernel matches it under `__main__` too), or, for a
    kernel moved to another module unchanged, its name there: same function name, same source digest.
    Entries of other kernels, and compiled kernels, are kept as they are."""
    by_previous: dict[tuple[str, str], model.KernelIdentity] = {}
    moved_from: dict[tuple[str, str], model.KernelIdentity] = {}  # (function name, digest) -> kernel
    for kernel in current:
        identified = dataclasses.replace(kernel, previous=None)
        moved_from[(_function_name(kernel.name), kernel.source_hash)] = identified
        previous = kernel.previous
        if previous is not None:
            for name in (previous.name, f"__main__.{_function_name(previous.name)}"):
                by_previous[(name, previous.source_hash)] = identified
    held = {e.slot for e in results.entries}
    moved = 0
    entries = []
    for entry in results.entries:
        if entry.kernel.scheme is model.IdentityScheme.TRITON_CACHE_KEY:
            now = by_previous.get((entry.kernel.name, entry.kernel.source_hash))
        else:
            now = moved_from.get((_function_name(entry.kernel.name), entry.kernel.source_hash))
        if now is not None and now != entry.kernel:
            if model.slot_of(now, entry.key) in held:
                continue
            entry = dataclasses.replace(entry, kernel=now)
            moved += 1
        entries.append(entry)
    return results.with_entries(tuple(sorted(entries, key=model.entry_sort_key))), moved


def _function_name(kernel_name: str) -> str:
    return kernel_name.rsplit(".", 1)[-1]
