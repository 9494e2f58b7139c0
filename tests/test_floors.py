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
    "prediction",
    "naming",
    "selection",
    "search",
    "decision",
    "errors",
    "fallbacks",
    "whole_match",
    "results.merge",
)


@pytest.mark.parametrize("module", CORE)
def test_the_core_imports_only_the_core(module: str) -> None:
    allowed = {f"tuned_kernels.{m}" for m in CORE}
    assert graph()[f"tuned_kernels.{module}"] <= allowed


# Internals, each allowed in one edge only (every line of the package, benchmarks/ and ci/ is checked).
TRITON_INTERNALS = re.compile(
    r"^\s*(from|import) triton\.(runtime|compiler|backends|knobs|_C)\b|^\s*from triton import .*\b(knobs|runtime)\b|"
    r"\bknobs\.|\bdriver\.|\._bench\b|\._do_bench\b|\.prune_configs\s*=|\._active\b"
)
INDUCTOR_INTERNALS = re.compile(r"\btorch\._inductor\b|\binductor_choices_class\b|\bfeedback_saver")
TORCH_INTERNALS = re.compile(r"\btorch\._(C|dynamo)\b|^\s*from torch import .*\b_(C|dynamo)\b")
IMPORT_STATE = re.compile(r"\b_initializing\b")  # importlib's private mark of a module being imported
TRITON_EDGE = ROOT / "tuned_kernels" / "triton_edge"
INDUCTOR_EDGE = ROOT / "tuned_kernels" / "inductor_edge"
POST_IMPORT = ROOT / "tuned_kernels" / "post_import.py"  # the one reader of importlib's private state
EDGES = {
    "Triton's": (TRITON_INTERNALS, (TRITON_EDGE,)),
    "Inductor's": (INDUCTOR_INTERNALS, (INDUCTOR_EDGE,)),
    "torch's": (TORCH_INTERNALS, (TRITON_EDGE, INDUCTOR_EDGE)),
    "importlib's": (IMPORT_STATE, (POST_IMPORT,)),
}
AUTOLOAD = ROOT / "tuned_kernels" / "_autoload.py"  # names the modules it waits for, importing none


def checked_files() -> list[Path]:
    """The package's modules and the scripts beside it (benchmarks/, ci/)."""
    return [*modules().values(), *(ROOT / "benchmarks").rglob("*.py"), *(ROOT / "ci").rglob("*.py")]


def internals_outside(pattern: re.Pattern[str], edges: tuple[Path, ...], files: list[Path]) -> list[str]:
    """Each line of `files` outside `edges` that touches what `pattern` matches (comments left out)."""
    offenders = []
    for path in files:
        if path == AUTOLOAD or any(path.is_relative_to(edge) for edge in edges):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line.split("#", 1)[0]):
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                offenders.append(f"{where}:{number}: {line.strip()}")
    return offenders


def test_the_internals_pattern_sees_a_patch_and_an_import() -> None:
    assert TRITON_INTERNALS.search("    from triton.runtime.autotuner import Autotuner")
    assert TRITON_INTERNALS.search("cls._bench = _bench") and not TRITON_INTERNALS.search("import triton")
    assert TORCH_INTERNALS.search("torch._C._cuda_getCurrentRawStream(0)")
    assert TORCH_INTERNALS.search("    from torch import _dynamo") and not TORCH_INTERNALS.search(
        "torch.cuda"
    )


@pytest.mark.parametrize("whose", EDGES)
def test_only_its_edge_touches_each_libraries_internals(whose: str) -> None:
    pattern, edges = EDGES[whose]
    assert internals_outside(pattern, edges, checked_files()) == []


def test_a_dynamo_import_planted_outside_the_edges_is_caught(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("import torch._dynamo\n\ntorch._dynamo.reset()\n")
    pattern, edges = EDGES["torch's"]
    assert internals_outside(pattern, edges, [*checked_files(), planted]) == [
        "planted.py:1: import torch._dynamo",
        "planted.py:3: torch._dynamo.reset()",
    ]


SUBPROCESS_CALLS = ("run", "check_output", "call", "check_call")
RUNS_THE_USERS_PROGRAM = {  # the user's own command: it runs as long as it runs, as without tuned-kernels
    ROOT / "aot" / "capture.py",
    ROOT / "tuned_kernels" / "cli" / "capturing.py",
    ROOT / "tuned_kernels" / "cli" / "misses.py",
}


def test_every_subprocess_a_test_benchmark_or_script_starts_has_a_time_limit() -> None:
    """One hung child must not stall CI for its 90 minutes (pytest-timeout bounds each test as well)."""
    files = [*checked_files(), *(ROOT / "tests").rglob("*.py")]
    unbounded = []
    for path in files:
        if path in RUNS_THE_USERS_PROGRAM:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "subprocess"
                and node.func.attr in SUBPROCESS_CALLS
                and not any(k.arg == "timeout" for k in node.keywords)
            ):
                unbounded.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert unbounded == []
