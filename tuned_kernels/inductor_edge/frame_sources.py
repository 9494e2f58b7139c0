"""A saved frame's sources as Dynamo names them (`L['x']`, `G['ACT'].act`, `___odict_getitem(L['f'].t, 'k')`),
read in a served frame's locals and globals, and what tuned-kernels checks on them beyond torch's saved
guards: each object guarded by identity, described as the capture's was (`IdentityChecks`, at every call),
and the dimension marks the capture's tensors had (`marked`)."""

from __future__ import annotations

import ast
import builtins
import functools
import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

from tuned_kernels.inductor_edge import frame_file

# a frame's local or global as Dynamo names it (`L['x']`, `G["y"]`): which scope, and the quoted name; not
# a subscript of a name ending in L or G (`LOSS_MAPPING['ForCausalLM']`)
TOP_LEVEL = re.compile(r"""(?<![\w.\])])([LG])\[('[^'\\]*'|"[^"\\]*")\]""")


def roots(source: str) -> list[tuple[str, str, str]]:
    """The locals and globals a guard's source reads from, anywhere in it (`L['func'].scale`, also
    `___odict_getitem(L['func'].table, 'k')`): each as its text, its scope (L or G) and its name."""
    return [(found[0], found[1], found[2][1:-1]) for found in TOP_LEVEL.finditer(source)]


MISSING = object()  # what a source that finds nothing reads as


@functools.lru_cache(maxsize=256)
def reader(source: str) -> Callable[[Any, Any], Any]:
    """What Dynamo's name for a guarded source (`G['ACT']`, `L['self'].act`) finds in a frame, given its
    locals and globals: compiled once into a function of the two (a guard reads it at every call)."""
    from torch._dynamo import guards

    closure = getattr(guards, "_get_closure_vars", lambda: getattr(guards, "CLOSURE_VARS", {}))()
    try:
        made = eval(  # a source Dynamo named, as an expression of L and G (a frame is code: trusted bundles)
            compile(f"lambda L, G: ({source})", "<guarded source>", "eval"),
            {**closure, "__builtins__": builtins.__dict__},
        )
    except SyntaxError:
        return lambda f_locals, f_globals: MISSING

    def read(f_locals: Any, f_globals: Any) -> Any:
        try:
            return made(f_locals, f_globals)
        except Exception:
            return MISSING

    return read


def read_source(source: str, f_locals: Any, f_globals: Any) -> Any:
    """What Dynamo's name for a guarded source finds in a frame (a sentinel where it finds nothing)."""
    return reader(source)(f_locals, f_globals)


class IdentityChecks:
    """Whether each source a frame guards by identity holds what the capture's did. Asked once as the frame
    loads (`differs`, saying which does not) and then by Dynamo at every call (`holds`): when every source
    holds the object last found so (read all at once, compared by identity), true at once; otherwise each
    source read and its object described once (by id, holding it: an id is not reused meanwhile)."""

    def __init__(self, identities: Sequence[tuple[str, str]], f_globals: Any) -> None:
        self.f_globals = f_globals
        self.read_all = reader(f"({', '.join(source for source, _ in identities)},)")
        self.checks = [(source, reader(source), expected) for source, expected in identities]
        self.known: list[dict[int, tuple[Any, bool]]] = [{} for _ in identities]  # by id: as captured?
        self.passed: list[Any] = [MISSING] * len(identities)

    def holds(self, f_locals: Any) -> bool:
        values = self.read_all(f_locals, self.f_globals)
        if (
            isinstance(values, tuple)
            and len(values) == len(self.passed)
            and all(map(operator.is_, values, self.passed))
        ):
            return True
        return self.differs(f_locals) is None

    def differs(self, f_locals: Any) -> str | None:
        """The first source that does not hold what the capture's did, said (None: each holds)."""
        for at, (source, read, expected) in enumerate(self.checks):
            value, known = read(f_locals, self.f_globals), self.known[at]
            seen = known.get(id(value))
            if seen is None or seen[0] is not value:
                if len(known) > 64:
                    known.clear()
                seen = known[id(value)] = (value, frame_file.described(value) == expected)
            if not seen[1]:
                return f"{source} is not {expected}"
            self.passed[at] = value
        return None


def marked(scopes: Any, marks: Sequence[tuple[str, str, tuple[int, ...]]]) -> bool:
    """Puts back on the frame's saved tensors the dimension marks the capture's had (torch's saved guards
    drop them: a tensor marked as the capture's would then fail its guard); False where a mark's source
    names no tensor."""
    import torch

    for source, attribute, dims in marks:
        tensor = reader(source)(scopes.local_scope, scopes.global_scope)
        if not isinstance(tensor, torch.Tensor):
            return False
        setattr(tensor, attribute, set(dims))
        tensor._has_dynamo_dim_marking = True  # type: ignore[attr-defined]
    return True


def fill_checked(scopes: Any, checks: frame_file.FrameChecks, f_locals: Any, f_globals: Any) -> None:
    """torch's saved guards keep no object its pickle could not name (a decorator's inner function, which
    its module names by its wrapper: a `_Missing` in their place), and a guard on its attributes (`L['func']
    .__name__`) then cannot be built. Where tuned-kernels checks such an object's identity itself (a local
    or global the frame guarded), the served function's own takes its place: the check holds it to be what
    the capture's was."""
    for source, _ in checks.identities:
        found = TOP_LEVEL.fullmatch(source)
        if found is None:
            continue
        scope, served = (
            (scopes.local_scope, f_locals) if found[1] == "L" else (scopes.global_scope, f_globals)
        )
        name = ast.literal_eval(found[2])
        if type(scope.get(name)).__name__ == "_Missing" and name in served:
            scope[name] = served[name]
