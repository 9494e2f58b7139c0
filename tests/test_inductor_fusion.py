"""torch.compile: a served GEMM template fuses what its captured twin fused, and nothing else.

At capture Inductor benchmarked each fusion into a GEMM it timed; served, the GEMM has one choice and the
scheduler would fuse whatever its heuristics allow. Its Triton templates need a GPU (tests/test_gpu.py checks
that a served Llama-style graph generates the captured graph's kernels); here the hooks are driven with
stand-ins for the scheduler's nodes, through the real registry and results files."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from tuned_kernels.registry import Registry
from tuned_kernels.registry.settings import Settings

from tests.test_inductor import MM_KEY, _Choice, _Graph, _header
from tuned_kernels import model, resolving
from tuned_kernels.errors import TunedKernelsWarning
from tuned_kernels.inductor_edge import choices, fusion, keys
from tuned_kernels.results import read_results, write_results

MM = keys.identity_of("mm")
FIRST = choices.at_occurrence(MM_KEY, 0)


class _Node:
    """A scheduler node as the Inductor edge reads it: its parts in order (a fused node's), which of them is
    a template, and the template's buffer."""

    def __init__(self, *parts: str, buffer: object = None) -> None:
        self.parts, self.buffer = parts, buffer

    def get_nodes(self) -> list[_Node]:
        return [_Node(p) for p in self.parts] if len(self.parts) > 1 else [self]

    def is_template(self) -> bool:
        return "template" in self.parts

    def get_template_node(self) -> object:
        return self.buffer if self.is_template() else None


@dataclasses.dataclass(eq=False)
class _Buffer:
    """A template buffer: the choice Inductor made it from, in its annotations; `timed`: one whose choices
    Inductor timed (a `MultiTemplateBuffer`)."""

    annotations: dict[str, object] = dataclasses.field(default_factory=dict)
    timed: bool = False


@pytest.mark.parametrize(
    ("parts", "fused"),
    [
        (("template",), fusion.Fused(epilogue=False, prologue=False)),
        (("template", "gelu"), fusion.Fused(epilogue=True, prologue=False)),
        (("silu_mul", "template"), fusion.Fused(epilogue=False, prologue=True)),
        (("silu_mul", "template", "add"), fusion.Fused(epilogue=True, prologue=True)),
        (("add", "gelu"), None),  # no template
    ],
)
def test_what_a_node_fused_into_its_template_is_read_from_the_order_of_its_parts(
    parts: tuple[str, ...], fused: fusion.Fused | None
) -> None:
    assert fusion.fused_in(_Node(*parts)) == fused


def _capture(tmp_path: Path, nodes: list[_Node]) -> Path:
    """A capture in which each of `nodes`' templates is the first GEMM of MM_KEY, timed by Inductor."""
    path = tmp_path / "captured.pb.zst"
    registry = Registry(Settings(capture=path))
    fusion.record_timed(registry, nodes, lambda buffer: fusion.Gemm(MM, FIRST) if buffer.timed else None)
    return path


def _served_template(registry: Registry, graph: object) -> _Buffer:
    """Lowers MM_KEY's first GEMM in `graph`, served, and gives the template buffer Inductor makes of it."""
    from torch._inductor.virtualized import V

    triton = _triton_mm()
    with V.set_graph_handler(graph):  # type: ignore[arg-type]
        served = choices._serve(registry, {"triton": [triton]}, None, "mm")
    assert served is triton
    return _Buffer({"ktc": served})


def _can_fuse(producer: _Node, consumer: _Node) -> bool:
    return choices.TunedChoices.can_fuse_vertical(None, producer, consumer, 1)


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundle a test writes to this path is served; MM_KEY is the key of every GEMM lowered."""
    monkeypatch.setenv("TUNED_KERNELS_PATH", str(tmp_path / "bundle.pb.zst"))
    monkeypatch.setenv("TUNED_KERNELS_CACHE_DIR", str(tmp_path / "overlay"))
    monkeypatch.setattr(choices, "key_of", lambda _: MM_KEY)
    return tmp_path / "bundle.pb.zst"


def _triton_mm() -> _Choice:
    return _Choice("triton::mm", BLOCK_M=64, num_warps=4, num_stages=3)


def _bundle(path: Path, *entries: model.Entry) -> None:
    """A bundle holding MM_KEY's choice, a Triton template, and `entries`."""
    config = keys.config_of(_triton_mm())
    assert config is not None
    gemm = model.Entry(MM, MM_KEY, config, (model.Timing(config, 0.01),))
    write_results(path, model.Results(_header(torch.__version__), (gemm, *entries)))


def test_a_served_template_takes_the_epilogue_its_capture_fused_and_no_prologue(
    served: Path, tmp_path: Path
) -> None:
    captured = _capture(tmp_path, [_Node("template", "gelu", buffer=_Buffer(timed=True))])
    (entry,) = read_results(captured).entries
    assert (entry.kernel.name, entry.key) == ("inductor.mm.fusion", FIRST)
    _bundle(served, entry)
    registry = Registry(Settings())
    template = _Node("template", buffer=_served_template(registry, _Graph()))
    with resolving.installed(registry):
        assert _can_fuse(template, _Node("gelu"))  # an epilogue, as captured
        assert not _can_fuse(_Node("silu_mul"), template)  # a prologue the capture did not fuse
    assert registry.stats.hits == 1  # the GEMM's choice (its fusions are part of it)


def test_a_served_template_whose_capture_fused_nothing_fuses_nothing(served: Path, tmp_path: Path) -> None:
    (entry,) = read_results(_capture(tmp_path, [_Node("template", buffer=_Buffer(timed=True))])).entries
    _bundle(served, entry)
    registry = Registry(Settings())
    template = _Node("template", buffer=_served_template(registry, _Graph()))
    with resolving.installed(registry):
        assert not _can_fuse(template, _Node("gelu"))
        assert not _can_fuse(_Node("silu_mul"), template)
        assert _can_fuse(_Node("add"), _Node("gelu"))  # nodes without a template: Inductor decides


def test_a_served_template_without_a_captured_fusion_record_fuses_as_inductor_decides(served: Path) -> None:
    _bundle(served)  # a bundle captured before fusions were recorded
    registry = Registry(Settings())
    template = _Node("template", buffer=_served_template(registry, _Graph()))
    with resolving.installed(registry):
        assert _can_fuse(template, _Node("gelu")) and _can_fuse(_Node("silu_mul"), template)


def test_an_edited_fusion_record_is_not_followed_with_one_warning(served: Path) -> None:
    edited = model.Config.of({"epilogue": "never", "prologue": False})
    _bundle(served, model.Entry(fusion.identity_for(MM), FIRST, edited))
    registry = Registry(Settings())
    template = _Node("template", buffer=_served_template(registry, _Graph()))
    warning = r"not one of the configs of inductor\.mm\.fusion"
    with resolving.installed(registry), pytest.warns(TunedKernelsWarning, match=warning):
        assert _can_fuse(template, _Node("gelu"))


def test_only_gemms_inductor_timed_have_their_fusions_recorded(tmp_path: Path) -> None:
    """A served GEMM's fusions were the bundle's: nothing new to remember (no overlay write per process)."""
    nodes = [
        _Node("template", "gelu", buffer=_Buffer(timed=True)),
        _Node("template", buffer=_Buffer()),
        _Node("add"),
    ]
    entries = read_results(_capture(tmp_path, nodes)).entries
    assert [(e.key, e.best) for e in entries] == [(FIRST, fusion.config_of(fusion.Fused(True, False)))]


def test_inspect_shows_the_fusions_a_gemm_took() -> None:
    from tuned_kernels.results.report import results_table

    fused = fusion.config_of(fusion.Fused(epilogue=True, prologue=False))
    entry = model.Entry(fusion.identity_for(MM), FIRST, fused)
    (line,) = results_table(model.Results(_header(torch.__version__), (entry,))).splitlines()[-1:]
    assert line.startswith("inductor.mm.fusion") and "  epilogue=True prologue=False" in line
    assert "warps" not in line
