"""The internals of Triton and torch that tuned-kernels patches: each is laid out here (the versions CI runs)
as its patch expects; one laid out otherwise is said once, and its patch steps aside."""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any

import pytest

from tuned_kernels import internals
from tuned_kernels.helion_edge import shapes as helion_shapes
from tuned_kernels.inductor_edge import shapes as inductor_shapes
from tuned_kernels.triton_edge import autotuner
from tuned_kernels.triton_edge import shapes as triton_shapes

# Helion's where it is installed (an optional extra; the GPU machine runs these without it)
HELION_SHAPES = helion_shapes.SHAPES if importlib.util.find_spec("helion") else ()
SHAPES = (*triton_shapes.SHAPES, *inductor_shapes.SHAPES, *HELION_SHAPES)  # every internal the edges patch


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s.owner}.{'+'.join(s.methods)}")
def test_each_patched_internal_is_laid_out_here_as_its_patch_expects(
    shape: internals.Shape, recwarn: pytest.WarningsRecorder
) -> None:
    assert internals.holds(shape)
    assert [str(w.message) for w in recwarn] == []


class _AutotunerThatTunesElsewhere:
    """A Triton whose Autotuner.run no longer reaches prune_configs by name."""

    def prune_configs(self, kwargs: dict[str, Any]) -> list[Any]:
        return []

    def _bench(self, *args: Any, **kwargs: Any) -> float:
        return 0.0

    def run(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_a_triton_autotuner_laid_out_otherwise_is_not_patched_and_said_once(
    monkeypatch: pytest.MonkeyPatch, recwarn: pytest.WarningsRecorder
) -> None:
    monkeypatch.setattr(internals, "_said", set())
    monkeypatch.setattr(autotuner, "_original", {})
    monkeypatch.setattr(autotuner, "autotuner_class", lambda: _AutotunerThatTunesElsewhere)
    original = _AutotunerThatTunesElsewhere.prune_configs
    autotuner.patch()
    autotuner.patch()
    assert _AutotunerThatTunesElsewhere.prune_configs is original and autotuner._original == {}
    (said,) = [str(w.message) for w in recwarn]
    assert said.startswith("tuned-kernels: this triton ") and said.endswith(
        "has no Autotuner.run calling prune_configs: its autotuned kernels are tuned as Triton does it; "
        "no bundle serves them"
    )


@pytest.mark.parametrize(
    "shape",
    (*inductor_shapes.SHAPES, *helion_shapes.SHAPES),
    ids=lambda s: f"{s.owner}.{'+'.join(s.methods)}",
)
def test_a_torch_without_a_patched_method_steps_aside_with_one_line(
    shape: internals.Shape, recwarn: pytest.WarningsRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(internals, "_said", set())
    renamed = dataclasses.replace(shape, methods=tuple(m + "_renamed" for m in shape.methods))
    assert not internals.holds(renamed)
    assert not internals.holds(renamed)
    (said,) = [str(w.message) for w in recwarn]
    assert f"has no {shape.owner}.{shape.methods[0]}_renamed: {shape.without}" in said
