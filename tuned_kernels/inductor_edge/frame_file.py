"""A Dynamo frame as a bundle ships it, and what must hold for it to be served: the function Dynamo traced
(its code, by a digest that leaves out where the file is), the settings it compiled under, the source of
each function it inlined, and what each object it guarded by identity must be in another process.

Dynamo's own saved frames leave out its guards on the identity of globals, modules and functions (their ids
are the capturing process's): a frame traced with a global `ACT = torch.relu` would run where `ACT` is
`torch.tanh`. A frame file keeps each such guard as the source Dynamo names (`G['ACT']`, `L['self'].act`)
and a description of what it found there (`builtin torch._VariableFunctionsClass.relu`); the serving
process checks the same source against the same description before it serves the frame, and at every call
after. Objects this cannot describe keep a frame out of the bundle.

Nor do they keep how the program marked its tensors' dimensions (`torch._dynamo.mark_dynamic`): a saved
tensor is restored without them, and its guard then refuses every call whose tensor is marked as the
capture's was. A frame file keeps each tensor's marks by its source (`L['x']`), put back before its guards
are built.

The file: one line of JSON (these checks), then torch's serialized frame (a pickle: code, served only from
a bundle trusted with code). Pure: bytes and live objects in, text out.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
import sys
import types
from dataclasses import dataclass
from typing import Any

MAGIC = b"tuned-kernels frame 1\n"
MAX_CHECKS_BYTES = 1 << 20
SUFFIX = ".frame"


@dataclass(frozen=True)
class FrameChecks:
    module: str  # the `__name__` of the traced function's globals
    qualname: str  # its code's `co_qualname`
    code: str  # code_digest of its code
    settings: str  # a digest of Dynamo's, AOTAutograd's and Inductor's settings the frame compiled under
    identities: tuple[tuple[str, str], ...]  # (a guarded source as Dynamo names it, what it must be)
    sources: tuple[
        tuple[str, int, int, str], ...
    ]  # each inlined function: (module, first, last line, sha256)
    marks: tuple[tuple[str, str, tuple[int, ...]], ...] = ()  # (a tensor's source, a MARKS attribute, dims)

    @property
    def name(self) -> str:
        return f"{self.module}.{self.qualname}"


def write(checks: FrameChecks, compiled: bytes) -> bytes:
    line = json.dumps(
        {
            "module": checks.module,
            "qualname": checks.qualname,
            "code": checks.code,
            "settings": checks.settings,
            "identities": [list(i) for i in checks.identities],
            "sources": [list(s) for s in checks.sources],
            "marks": [[source, attribute, list(dims)] for source, attribute, dims in checks.marks],
        },
        sort_keys=True,
    ).encode()
    return MAGIC + line + b"\n" + compiled


def read(data: bytes) -> tuple[FrameChecks, bytes]:
    """The checks and torch's bytes of a frame file; ValueError for anything else (nothing is unpickled)."""
    if not data.startswith(MAGIC):
        raise ValueError("not a frame file")
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + MAX_CHECKS_BYTES)
    if end < 0:
        raise ValueError("its checks do not end")
    try:
        raw = json.loads(data[len(MAGIC) : end])
        checks = FrameChecks(
            module=_text(raw["module"]),
            qualname=_text(raw["qualname"]),
            code=_text(raw["code"]),
            settings=_text(raw["settings"]),
            identities=tuple((_text(s), _text(d)) for s, d in raw["identities"]),
            sources=tuple((_text(m), _line(a), _line(b), _text(h)) for m, a, b, h in raw["sources"]),
            marks=tuple(_mark(s, a, dims) for s, a, dims in raw.get("marks", [])),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"its checks do not read: {exc}") from None
    return checks, data[end + 1 :]


def _text(value: object) -> str:
    if not isinstance(value, str) or len(value) > 4096:
        raise ValueError("a field is not text")
    return value


def _mark(source: object, attribute: object, dims: object) -> tuple[str, str, tuple[int, ...]]:
    if attribute not in MARKS or not isinstance(dims, list) or len(dims) > 64:
        raise ValueError("a dimension mark is not one")
    return _text(source), str(attribute), tuple(_line(d) for d in dims)


# how a program marks a tensor's dimensions (torch._dynamo.mark_dynamic, maybe_mark_dynamic, mark_static),
# each a set of dimensions, which Dynamo's guard on the tensor compares with a call's
MARKS = (
    "_dynamo_dynamic_indices",
    "_dynamo_weak_dynamic_indices",
    "_dynamo_static_indices",
)
# marked unbacked: with bounds and shape ids, which a frame does not keep (such a frame is not saved)
UNBACKED = ("_dynamo_unbacked_indices", "_dynamo_strict_unbacked_indices")


def marks_of(value: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """A tensor's dimension marks, each (attribute, dimensions)."""
    return tuple(
        (a, tuple(sorted(getattr(value, a)))) for a in MARKS if isinstance(getattr(value, a, None), set)
    )


def _line(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError("a line number is not one")
    return value


def code_digest(code: types.CodeType) -> str:
    """A digest of what a code object does: its bytecode, names, constants (nested code by its digest) and
    arguments, not its file or line numbers (a program at another path has the same code)."""
    h = hashlib.sha256()
    parts: tuple[bytes | str, ...] = (
        code.co_code,
        repr((code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags)),
        repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars)),
        *(_constant(c) for c in code.co_consts),
    )
    for part in parts:
        h.update(part if isinstance(part, bytes) else part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _constant(value: object) -> str:
    if isinstance(value, types.CodeType):
        return f"code {code_digest(value)}"
    if isinstance(value, frozenset):  # its order follows string hashing, which differs per process
        return "frozenset " + repr(sorted(_constant(v) for v in value))
    if isinstance(value, tuple):
        return "tuple " + repr([_constant(v) for v in value])
    return repr(value)


def describe(value: Any) -> str | None:
    """What an object Dynamo guarded by identity is, in words that name the same object in another process
    of the same program and torch (None: it has none, as an instance or a closure)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    if isinstance(value, type):
        return f"class {value.__module__}.{value.__qualname__}"
    if isinstance(value, types.CodeType):  # compared by what it holds: the same in another process
        return f"code {getattr(value, 'co_qualname', value.co_name)} {code_digest(value)}"
    if isinstance(value, enum.Enum):  # a member: one object per process, named by its class and name
        return f"enum member {type(value).__module__}.{type(value).__qualname__}.{value.name}"
    if isinstance(value, types.FunctionType):
        return _function(value, ())
    if isinstance(value, types.BuiltinFunctionType):
        owner = value.__self__
        if isinstance(owner, types.ModuleType):
            return f"builtin {owner.__name__}.{value.__qualname__}"
        if owner is None or isinstance(owner, type):
            where = owner.__module__ if isinstance(owner, type) else value.__module__
            return f"builtin {where}.{value.__qualname__}"
        module = sys.modules.get(getattr(value, "__module__", None) or "")
        if getattr(module, value.__name__, None) is value:  # pybind11's (torch._C's): bound to a record
            return f"builtin {module.__name__}.{value.__name__}"  # type: ignore[union-attr]
        return None  # a method bound to an instance
    if isinstance(value, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        owner = value.__objclass__
        return f"descriptor {owner.__module__}.{owner.__qualname__}.{value.__name__}"
    return _operator(value)


def _operator(value: Any) -> str | None:
    """An operator of torch's registry (`torch.ops.ns.op`, `torch.ops.ns.op.default`: a library's custom op,
    as a model calls it) by its registered name: each process's registry makes its own object for it, and a
    graph calls it by that name."""
    kind = type(value)
    if kind.__module__ != "torch._ops":
        return None
    if kind.__name__ == "OpOverloadPacket":
        return f"operator {value._qualified_op_name}"
    if kind.__name__ == "OpOverload":
        return f"operator {value._schema.name}, overload {value._overloadname}"
    return None


def described(value: Any) -> str | None:
    """`describe`, and a constant (a number, text, a tuple of them) by its type and value: what a guard on
    a value checks."""
    said = describe(value)
    return said if said is not None else _held(value, ())


MAX_CLOSURE_DEPTH = 8  # decorators wrapping decorators: a closure nested deeper is not described


def _function(value: types.FunctionType, within: tuple[int, ...]) -> str | None:
    """A function by module, name and code; one with a closure (a decorator's wrapper: its cells hold the
    function it wraps and the decorator's arguments) also by its defaults and what each cell holds, where
    each of those is described (None where one is not). `within`: the functions whose cells led here (one
    met again, a wrapper whose cell holds itself, is named, not described again)."""
    named = f"function {value.__module__}.{value.__qualname__} {code_digest(value.__code__)}"
    if not value.__closure__:
        return named
    if id(value) in within:
        return f"{named} (met above)"
    if len(within) >= MAX_CLOSURE_DEPTH:
        return None
    parts, inner = [named], (*within, id(value))
    for name, cell in zip(value.__code__.co_freevars, value.__closure__, strict=True):
        try:
            held = cell.cell_contents
        except ValueError:  # a cell not filled yet
            return None
        said = _held(held, inner)
        if said is None:
            return None
        parts.append(f"{name}={said}")
    for default in (*(value.__defaults__ or ()), *sorted((value.__kwdefaults__ or {}).items())):
        said = _held(default, inner)
        if said is None:
            return None
        parts.append(f"default {said}")
    return "; ".join(parts)


def _held(value: Any, within: tuple[int, ...]) -> str | None:
    """A closure cell's or a default's value: a constant by its type and repr, a tuple or list item by item
    (`register_dataclass`'s flatten function holds its class's field names so), a dict key by key, a
    function (its own closure included) or any object `describe` names."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return f"{type(value).__name__} {value!r}"
    if type(value) in (tuple, list):
        items = [_held(item, within) for item in value]
        return None if None in items else f"{type(value).__name__} ({', '.join(items)})"  # type: ignore[arg-type]
    if type(value) is dict:  # keyword arguments a wrapper passes on: in order, keys and values described
        pairs = [(_held(key, within), _held(item, within)) for key, item in value.items()]
        if any(None in pair for pair in pairs):
            return None
        return f"dict ({', '.join(f'{key}: {item}' for key, item in pairs)})"
    if isinstance(value, types.FunctionType):
        return _function(value, within)
    return describe(value)


_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def portable(settings: dict[str, Any], left_out: frozenset[str]) -> dict[str, str]:
    """A settings module's values (`save_config_portable()`) as text that is the same in another process
    of the same program: sets sorted, functions by name, no addresses; `left_out` and paths dropped."""
    kept = {}
    for name, value in settings.items():
        if name in left_out or name.endswith(("_dir", "_dir_root", "_path", "logpath")):
            continue
        kept[name] = _setting(value)
    return kept


def _setting(value: Any) -> str:
    if isinstance(value, (set, frozenset)):
        return repr(sorted(_setting(v) for v in value))
    if isinstance(value, dict):
        return repr({_setting(k): _setting(v) for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))})
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '?')}.{value.__qualname__}"
    return _ADDRESS.sub("", repr(value))
