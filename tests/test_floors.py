"""The architecture, checked: floors without cycles, one folder that touches Triton's internals and one
that touches Inductor's.

core (pure) <- Triton and Inductor edges (tuned_kernels/triton_edge/, inductor_edge/) and storage edge
(results/, packager/, hardware/) <- the applications registry/ (serve) and aot/ (tune, capture, compile),
which never import each other <- the CLI. Every import counts, function-local ones included.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = ("hardware", "aot", "packager", "registry")  # top-level folders installed as tuned_kernels.*
FOLDERS = {"tuned_kernels": ROOT / "tuned_kernels", **{f"tuned_kernels.{d}": ROOT / d for d in SUBPACKAGES}}


def modules() -> dict[str, Path]:
    """Every module of the installed package, by dotted name, from the source folders it is built from."""
    found = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def imports(path: Path, known: set[str]) -> set[str]:
    """The package's modules `path` imports, anywhere in it (`from a import b` names a.b if it is one)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                names.add(submodule if submodule in known else node.module)
    return {n for n in names if n in known and n != "tuned_kernels"}


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(path, set(found)) for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_back() -> None:
    assert cycles(graph()) == []


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize(("low", "high"), [("aot", "registry"), ("registry", "aot")])
def test_the_two_applications_never_import_each_other(low: str, high: str) -> None:
    offenders = [
        (m, i) for m, targets in graph().items() for i in targets
        if m.startswith(f"tuned_kernels.{low}") and i.startswith(f"tuned_kernels.{high}")
    ]  # fmt: skip
    assert offenders == []


CORE = (
    "model",
    "matching",
    "nearest",
    "naming",
    "selection",
    "search",
    "decision",
    "errors",
    "results.merge",
)


@pytest.mark.parametrize("module", CORE)
def test_the_core_imports_only_the_core(module: str) -> None:
    allowed = {f"tuned_kernels.{m}" for m in CORE}
    assert graph()[f"tuned_kernels.{module}"] <= allowed


# Touching these is touching Triton's internals: allowed only under tuned_kernels/triton_edge/.
TRITON_INTERNALS = re.compile(
    r"^\s*(from|import) triton\.(runtime|compiler|backends|knobs|_C)\b|^\s*from triton import .*\b(knobs|runtime)\b|"
    r"\bknobs\.|\bdriver\.|\._bench\b|\._do_bench\b|\.prune_configs\s*=|\._active\b"
)


def test_the_internals_pattern_sees_a_patch_and_an_import() -> None:
    assert TRITON_INTERNALS.search("    from triton.runtime.autotuner import Autotuner")
    assert TRITON_INTERNALS.search("cls._bench = _bench") and not TRITON_INTERNALS.search("import triton")


def test_only_the_triton_edge_touches_tritons_internals() -> None:
    edge = ROOT / "tuned_kernels" / "triton_edge"
    offenders = []
    for path in modules().values():
        if path.is_relative_to(edge):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if TRITON_INTERNALS.search(line.split("#", 1)[0]):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


# Inductor's internals: allowed only under tuned_kernels/inductor_edge/.
INDUCTOR_INTERNALS = re.compile(r"\btorch\._inductor\b|\binductor_choices_class\b|\bfeedback_saver")


def test_only_the_inductor_edge_touches_inductors_internals() -> None:
    edge = ROOT / "tuned_kernels" / "inductor_edge"
    offenders = []
    for path in modules().values():
        if path.is_relative_to(edge) or path.name == "_autoload.py":  # names the module it waits for
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if INDUCTOR_INTERNALS.search(line.split("#", 1)[0]):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []
