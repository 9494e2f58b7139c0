"""What a kernel is, independent of where its code sits: its module as it would be imported, and a digest of
what decides its behaviour.

`source_digest(fn)` hashes the function's syntax tree (no line numbers, comments, blank lines, docstring or
decorators), the digests of the `@triton.jit` functions it calls (recursively) and the values of the globals
it reads (constexprs, numbers, strings). Moving a kernel within its file, adding an import or a function
above it, or reformatting comments keeps the digest; a changed body, a changed helper or a changed global
constexpr does not. Triton's own `JITFunction.cache_key` counts line numbers, so it changes on any edit above
a kernel: it is kept only as the kernel's previous identity, to read bundles made with it.

`module_name(fn)` names a kernel defined in the script being run (`__main__`) by the module that file is
when imported (`python app.py`, `python -m app` and `import app` all give `app`).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

# Modules whose functions and values are the compiler's own: covered by the compiler fingerprint (Helion's
# language by the Helion version its kernels are keyed with).
COMPILER_MODULES = ("triton", "helion", "math", "copy", "builtins", "torch", "numpy")
MAX_DEPTH = 32  # helper calls followed this deep (a kernel's call graph is shallow; cycles are cut anyway)


def module_name(fn: Callable[..., Any]) -> str:
    """The module `fn` is named by: its own, or for a function of the script being run, the module that
    script would be if imported (`__main__` where nothing says: `python -c`, a notebook)."""
    module = fn.__module__
    if module != "__main__":
        return module
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and not spec.name.endswith("__main__"):
        return str(spec.name)  # `python -m pkg.app`
    code = getattr(fn, "__code__", None)
    file = getattr(main, "__file__", None) or (code.co_filename if code is not None else None)
    return importable_name(Path(file)) if file else "__main__"


def importable_name(path: Path) -> str:
    """The dotted module name of a Python file: its stem, under each enclosing folder that is a package."""
    path = path.resolve()
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if path.suffix != ".py" or not all(p.isidentifier() for p in parts):
        return "__main__"
    return ".".join(parts)


def source_digest(fn: FunctionType) -> str:
    """A hex sha256 of what decides `fn`'s behaviour: its syntax tree and what it calls and reads."""
    return _digest(fn, ())


def _digest(fn: FunctionType, stack: tuple[FunctionType, ...]) -> str:
    if fn in stack or len(stack) >= MAX_DEPTH:
        return f"recursion:{fn.__module__}.{fn.__qualname__}"
    hasher = hashlib.sha256()
    tree = _syntax_tree(fn)
    hasher.update(canonical_tree(tree).encode("utf-8"))
    if isinstance(tree, (ast.FunctionDef, ast.AsyncFunctionDef)):
        scope = _scope(fn)
        for chain in sorted(set(_global_reads(tree))):
            described = _describe(_resolve(chain, scope), (*stack, fn))
            if described:
                hasher.update(f"\x00{'.'.join(chain)}={described}".encode())
    return hasher.hexdigest()


def canonical_tree(node: object) -> str:
    """A syntax tree as text, the same on every Python: node types and their fields, without positions and
    without fields that are empty or absent (each Python adds some: `type_params=[]` in 3.12)."""
    if isinstance(node, ast.AST):
        fields = [(name, value) for name, value in ast.iter_fields(node) if value is not None and value != []]
        return (
            f"{type(node).__name__}({','.join(f'{name}={canonical_tree(value)}' for name, value in fields)})"
        )
    if isinstance(node, list):
        return f"[{','.join(canonical_tree(value) for value in node)}]"
    return repr(node)


def _syntax_tree(fn: FunctionType) -> ast.AST:
    """The function's definition without decorators and docstring; its bytecode where there is no source."""
    try:
        module = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return ast.Constant(fn.__code__.co_code.hex() + repr(fn.__code__.co_names))
    node = next((n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if node is None:
        return module
    node.decorator_list = []
    first = node.body[0]
    if len(node.body) > 1 and isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        node.body = node.body[1:] if isinstance(first.value.value, str) else node.body
    return node


def _scope(fn: FunctionType) -> dict[str, Any]:
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False))
    nonlocals = {}
    for name, cell in cells.items():
        try:
            nonlocals[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return {**fn.__globals__, **nonlocals}


def _global_reads(tree: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[tuple[str, ...]]:
    """Every dotted name the function reads that it does not bind itself (`BLOCK`, `helpers.rowmax`)."""
    args = tree.args
    bound = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    bound.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    bound.update(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            continue  # reached from its root name below
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
            yield (node.id,)
    for node in ast.walk(tree):
        chain = _attribute_chain(node)
        if chain is not None and chain[0] not in bound:
            yield chain


def _attribute_chain(node: ast.AST) -> tuple[str, ...] | None:
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.insert(0, node.attr)
        node = node.value
    if not names or not isinstance(node, ast.Name):
        return None
    return (node.id, *names)


def _resolve(chain: tuple[str, ...], scope: dict[str, Any]) -> Any:
    """The value a dotted read names (None where it names nothing, or something of the compiler's own)."""
    if chain[0] not in scope:
        return None
    value = scope[chain[0]]
    for attr in chain[1:]:
        if isinstance(value, ModuleType) and _of_compiler(value.__name__):
            return None
        value = getattr(value, attr, None)
    return value


def _of_compiler(module: str) -> bool:
    return module.split(".", 1)[0] in COMPILER_MODULES


def _describe(value: Any, stack: tuple[FunctionType, ...]) -> str:
    """What of a read value counts: a helper's digest, a constant's value, else only its kind."""
    if value is None or isinstance(value, ModuleType):
        return ""
    inner = getattr(value, "fn", None)  # JITFunction, InterpretedFunction, constexpr functions
    if isinstance(inner, FunctionType) and not isinstance(value, FunctionType):
        if _of_compiler(inner.__module__):
            return ""
        return f"jit:{_digest(inner, stack)}"
    if type(value).__name__ == "constexpr" and hasattr(value, "value"):
        return f"constexpr:{_constant(value.value)}"
    constant = _constant(value)
    if constant:
        return constant
    if isinstance(value, FunctionType):
        return "" if _of_compiler(value.__module__) else f"function:{_digest(value, stack)}"
    if isinstance(value, type):
        return "" if _of_compiler(value.__module__) else f"class:{value.__module__}.{value.__qualname__}"
    kind = type(value)
    if _of_compiler(kind.__module__):
        return f"{kind.__name__}:{value}" if kind.__name__ == "dtype" else ""
    return f"{kind.__module__}.{kind.__qualname__}"


def _constant(value: Any) -> str:
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return f"{type(value).__name__}:{value!r}"[:1000]
    if isinstance(value, tuple) and all(_constant(v) for v in value):
        return "(" + ",".join(_constant(v) for v in value) + ")"
    return ""
