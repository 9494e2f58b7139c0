"""Merging shard files: a union in which the faster entry wins; associative, commutative, idempotent."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests import factories
from tuned_kernels import model
from tuned_kernels.cli import main
from tuned_kernels.errors import MergeConflictError
from tuned_kernels.results import merge_results, read_results, write_results
from tuned_kernels.results.merge import merge_entries


def merged(*groups: tuple[model.Entry, ...]) -> tuple[model.Entry, ...]:
    return merge_entries(groups)


def test_same_key_twice_keeps_the_faster() -> None:
    slow, fast = factories.entry(block=64, time_ms=3.0), factories.entry(block=256, time_ms=1.5)
    assert merged((slow,), (fast,)) == (fast,)
    assert merged((fast,), (slow,)) == (fast,)


def test_union_of_disjoint_shards() -> None:
    a, b = factories.entry(key=(1, "f16")), factories.entry(key=(2, "f16"))
    assert set(merged((a,), (b,))) == {a, b}


def test_different_targets_are_refused_unless_allowed() -> None:
    cpu = factories.results(factories.entry())
    gpu = factories.results(factories.entry(key=(2,)), target=factories.H100)
    with pytest.raises(MergeConflictError, match=r"b\.pb built for sm90, a\.pb for cpu"):
        merge_results([("a.pb", cpu), ("b.pb", gpu)], created_at="t", tool_version="v")
    both = merge_results([("a.pb", cpu), ("b.pb", gpu)], allow_mixed=True, created_at="t", tool_version="v")
    assert len(both.entries) == 2


def test_different_compilers_are_refused() -> None:
    new = factories.results(factories.entry())
    old = factories.results(factories.entry(), compiler=factories.TRITON_38)
    with pytest.raises(MergeConflictError, match=r"old\.pb built with triton 3\.8\.0, new\.pb with 3\.9\.0"):
        merge_results([("new.pb", new), ("old.pb", old)], created_at="t", tool_version="v")


entry_lists = st.lists(
    st.builds(
        factories.entry,
        st.just("k.kern"),
        st.tuples(st.integers(0, 3)),
        st.integers(1, 3),
        st.sampled_from([0.5, 1.0, 2.0]),
    ),
    max_size=6,
).map(tuple)


@given(entry_lists, entry_lists, entry_lists)
def test_merge_laws(
    a: tuple[model.Entry, ...], b: tuple[model.Entry, ...], c: tuple[model.Entry, ...]
) -> None:
    assert merged(a, b) == merged(b, a)
    assert merged(merged(a, b), c) == merged(a, merged(b, c))
    assert merged(a, a) == merged(a)


def test_merge_command_is_reproducible(tmp_path: Path) -> None:
    shards = [factories.results(factories.entry(key=(i,), time_ms=1.0 + i)) for i in range(3)]
    for i, shard in enumerate(shards):
        write_results(tmp_path / f"s{i}.pb", shard)
    names = [str(tmp_path / f"s{i}.pb") for i in range(3)]
    assert main(["merge", *names, "-o", str(tmp_path / "m1.pb")]) == 0
    assert main(["merge", *reversed(names), "-o", str(tmp_path / "m2.pb")]) == 0
    one, two = read_results(tmp_path / "m1.pb"), read_results(tmp_path / "m2.pb")
    assert one.entries == two.entries and [e.key for e in one.entries] == [(0,), (1,), (2,)]
    assert one.header.producer is model.Producer.MERGE


def test_carry_over_moves_the_entries_of_a_kernel_moved_to_another_module_unchanged() -> None:
    from tuned_kernels.results.merge import carry_over

    old = factories.entry(kernel="pkg.old_home.matmul_kernel")
    other = factories.entry(kernel="pkg.elsewhere.other_kernel")
    moved = dataclasses.replace(old.kernel, name="pkg.new_home.matmul_kernel")
    changed = dataclasses.replace(moved, source_hash=factories.source_hash("edited"))
    carried, count = carry_over(factories.results(old, other), [moved])
    assert count == 1 and {e.kernel.name for e in carried.entries} == {moved.name, other.kernel.name}
    assert carry_over(factories.results(old), [changed]) == (factories.results(old), 0)  # not the same code
