"""The internals of Triton and torch that tuned-kernels patches: each is laid out here (the versions CI runs)
as its patch expects; one laid out otherwise is said once, and its patch steps aside."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tuned_kernels import internals
from tuned_kernels.errors import TunedKernelsWarning
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
    assert [str(w.message) for w in recwarn if issubclass(w.category, TunedKernelsWarning)] == []


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
    (*inductor_shapes.SHAPES, *HELION_SHAPES),
    ids=lambda s: f"{s.owner}.{'+'.join(s.methods)}",
)
def test_a_torch_without_a_patched_method_steps_aside_with_one_line(
    shape: internals.Shape, recwarn: pytest.WarningsRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(internals, "_said", set())
    renamed = dataclasses.replace(shape, methods=tuple(m + "_renamed" for m in shape.methods))
    assert not internals.holds(renamed)
    assert not internals.holds(renamed)
    (said,) = [str(w.message) for w in recwarn if issubclass(w.category, TunedKernelsWarning)]
    assert f"has no {shape.owner}.{shape.methods[0]}_renamed: {shape.without}" in said


OWN_CHOICES = """
import dataclasses, torch
from torch._inductor import config
from tuned_kernels.inductor_edge import hooks, shapes

shapes.INDUCTOR_CHOICES = tuple(  # a torch whose choices classes are laid out otherwise
    dataclasses.replace(s, methods=tuple(m + "_renamed" for m in s.methods)) for s in shapes.INDUCTOR_CHOICES
)
with config.patch(inductor_choices_class=hooks.tuned_choices):
    out = torch.compile(lambda x: torch.relu(x) * 2)(torch.arange(-4.0, 4.0))
assert torch.equal(out, torch.relu(torch.arange(-4.0, 4.0)) * 2)
print(type(hooks.tuned_choices()).__name__)
"""


def test_a_torch_without_the_choices_hooks_shape_compiles_with_inductors_own_choices(tmp_path: Path) -> None:
    """Inductor asks the choices factory for a uuid to key each graph: where the hook's shape does not hold,
    what it gives instead is Inductor's own choices keyed as the hook is, and the program compiles, with
    one line said."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUNED_KERNELS", "TORCHINDUCTOR"))}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "inductor")
    done = subprocess.run(
        [sys.executable, "-c", OWN_CHOICES],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["InductorsOwnChoices"]
    said = [line for line in done.stderr.splitlines() if line.startswith("tuned-kernels: ")]
    assert len(said) == 1 and "LookupTableChoices._fallback_renamed" in said[0], done.stderr[-3000:]
