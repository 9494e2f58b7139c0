"""Capture's half of the saved frames (frames.py): each frame Dynamo compiled as one whole graph, compiled
again ahead of time by torch (`aot_compile_fullgraph`) from the graphs the program's own compile put in
Inductor's cache (frame_compile.py), with the checks a serving process makes (frame_file.py), into the
capture's Inductor cache directory (`frames/`), where capture harvests it with the graphs. A frame that
cannot be saved so is said once."""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import hashlib
import io
import shutil
import sys
import types
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tuned_kernels.errors import one_line, warn
from tuned_kernels.inductor_edge import frame_compile, frame_file, frame_sources, frames, graphs
from tuned_kernels.inductor_edge.cache_files import place_new_file

RESUMED = "torch_dynamo_resume_in_"  # Dynamo's functions for what follows a graph break


def capture(wrapper: Any, frame: Any, folder: Path) -> None:
    """Saves the frame Dynamo just compiled, compiled again ahead of time from the graph Inductor's cache
    holds by now; a frame that cannot be saved so is said once and served by the graph caches."""
    code = frame.f_code
    if code.co_name.startswith(RESUMED) or not frames.torch_can():
        return
    try:
        why = _save(wrapper, frame, folder)
    except Exception as exc:  # a graph break (not one whole graph), a backend torch cannot save
        why = one_line(f"{type(exc).__name__}: {exc}", 160)
    if why is not None:
        with contextlib.suppress(Warning):
            warn(f"Dynamo frame {frames.name_of(frame)} not saved: {why}; served by the graph caches, traced")


def _save(wrapper: Any, frame: Any, folder: Path) -> str | None:
    import torch
    from torch._dynamo.aot_compile import AOTCompiledFunction, aot_compile_fullgraph
    from torch._dynamo.eval_frame import innermost_backend
    from torch._dynamo.guards import CheckFunctionManager
    from torch._dynamo.hooks import Hooks

    code = frame.f_code
    backend = innermost_backend(wrapper)
    if not isinstance(backend, torch._TorchCompileInductorWrapper):
        return f"its backend is {type(backend).__name__}, not Inductor"
    closure = getattr(frame, "closure", None) if code.co_freevars else None
    if code.co_freevars and not closure:
        return "a closure whose cells Dynamo does not give"
    guards = _Guards(set(CheckFunctionManager.UNSUPPORTED_SERIALIZATION_GUARD_TYPES), frame)
    fn = types.FunctionType(code, frame.f_globals, code.co_name, None, closure)
    entries = folder.parent / "aotautograd"
    before = set(entries.iterdir()) if entries.is_dir() else set()
    try:
        with frame_compile.through_graph_cache() as lookups, _builtins_kept():
            if lookups is None:
                return "this torch's compile of it cannot be read through Inductor's cache"
            compiled = aot_compile_fullgraph(
                fn,
                _arguments(code, frame.f_locals),
                hooks=Hooks(guard_filter_fn=guards.keep),
                backend=backend,
            )
    finally:  # the entry this compile wrote as well (its graph again, bundled in): not the program's own
        for written in (set(entries.iterdir()) if entries.is_dir() else set()) - before:
            shutil.rmtree(written, ignore_errors=True)
    if (not_the_programs := lookups.why_not_saved()) is not None:
        return not_the_programs
    if (unsaved_global := _globals_as_imports(compiled, frame.f_globals, guards.globals_read)) is not None:
        return unsaved_global
    if guards.unkept:
        return guards.unkept[0]
    checks = frame_file.FrameChecks(
        module=str(frame.f_globals.get("__name__")),
        qualname=getattr(code, "co_qualname", code.co_name),
        code=frame_file.code_digest(code),
        settings=frames.settings_digest(wrapper),
        identities=tuple(sorted(guards.identities.items())),
        marks=tuple(sorted((source, attribute, dims) for (source, attribute), dims in guards.marks.items())),
        sources=tuple(
            sorted(
                (s.module, s.firstlineno, s.lastlineno, s.checksum)
                for s in compiled.source_info().inlined_sources
            )
        ),
    )
    held = frames.external_objects(code, closure, frame.f_globals)
    saved = _slimmed(AOTCompiledFunction.serialize(compiled, held).serialized_data, held)
    if (unreadable := _guards_read_back(saved, held)) is not None:
        return unreadable
    data = frame_file.write(checks, saved)
    place_new_file(folder / f"{hashlib.sha256(data).hexdigest()}{frame_file.SUFFIX}", data)
    return None


def _guards_read_back(saved: bytes, held: dict[str, Any]) -> str | None:
    """Why torch cannot read the frame's saved guards back, as a served process would (torch 2.11 fails on
    some it wrote itself: a function's defaults guarded), or None: a frame no process could load is not
    shipped to fail in each."""
    try:
        frames.guards_state(frames.saved_state(saved, held)["guards_state"])
    except Exception as exc:
        return f"torch cannot read its saved guards back ({one_line(f'{type(exc).__name__}: {exc}', 120)})"
    return None


class _Guards:
    """Which of Dynamo's guards on a frame torch saves (`keep`, its guard filter), and what tuned-kernels
    keeps of the others: a description of each object guarded by identity, each tensor's dimension marks,
    and the value of each guard under an object torch's saved guards cannot hold (a decorator's inner
    function: its guards are then built from the served function's own, and would hold whatever its
    attributes are); why a guard can be kept neither way (`unkept`)."""

    def __init__(self, unsaved: set[str], frame: Any) -> None:
        self.unsaved, self.frame = unsaved, frame
        self.identities: dict[str, str] = {}
        self.marks: dict[tuple[str, str], tuple[int, ...]] = {}
        self.unkept: list[str] = []
        self.missing: dict[str, bool] = {}  # by a local or global's source: torch's saved guards lack it
        self.globals_read: set[str] = set()  # the globals every guard reads from (`G['torch']`)

    def keep(self, entries: Sequence[Any]) -> list[bool]:
        return [self._kept(entry) for entry in entries]

    def _kept(self, entry: Any) -> bool:
        import torch

        # as Dynamo names it (`L['x']`, which a served frame reads again); entry.name drops the `L[...]`
        source = getattr(getattr(entry, "orig_guard", None), "name", entry.name)
        if entry.has_value and isinstance(entry.value, torch.Tensor):
            if any(hasattr(entry.value, a) for a in frame_file.UNBACKED):
                self.unkept.append(f"{source} is marked unbacked, whose bounds a frame does not keep")
            self.marks.update({(source, a): dims for a, dims in frame_file.marks_of(entry.value)})
        saved = entry.guard_type not in self.unsaved and not self.unsaved & set(entry.derived_guard_types)
        roots = frame_sources.roots(source)
        self.globals_read.update(name for _, scope, name in roots if scope == "G")
        under_missing = any(text != source and self._missing_in_saved_guards(text) for text, _, _ in roots)
        if not saved or under_missing:
            value = self._value(entry, source)
            described = None if value is frame_sources.MISSING else frame_file.described(value)
            if described is None:
                what = "the identity of" if not saved else "the value of"
                self.unkept.append(
                    f"a guard on {what} {source} ({entry.guard_type}), which another process cannot check"
                )
            else:
                self.identities[source] = described
        return saved

    def _value(self, entry: Any, source: str) -> Any:
        """What the guard checks: as torch read it, or, where it gives none, as the frame holds it now."""
        if entry.has_value:
            return entry.value
        return frame_sources.read_source(source, self.frame.f_locals, self.frame.f_globals)

    def _missing_in_saved_guards(self, root: str) -> bool:
        if root not in self.missing:
            value = frame_sources.read_source(root, self.frame.f_locals, self.frame.f_globals)
            self.missing[root] = frames.pickled_as_missing(value)
        return self.missing[root]


def _globals_as_imports(compiled: Any, f_globals: Any, guarded: Iterable[str]) -> str | None:
    """The globals Dynamo installed for the frame's code or its guards (`guarded`: the globals they read
    from) that torch's saved frame does not hold: a module (`___module_collections_…`, or `_…_c0` for a
    module a guard reads through, named by its id in this process) is saved as one of its imports, as torch
    saves its own; any other keeps the frame out (why). The program's own globals are the served
    function's."""
    artifacts = compiled._artifacts
    env = artifacts.runtime_env
    imports = dict(env.import_sources)
    unheld = frames.unheld_globals(artifacts, {**imports, **env.used_globals})
    for name in [*unheld, *sorted(set(guarded) - set(unheld) - set(imports) - set(env.used_globals))]:
        value = f_globals.get(name)
        if isinstance(value, types.ModuleType) and sys.modules.get(value.__name__) is value:
            imports[name] = value.__name__
        elif _installed_by_dynamo(name) or name not in f_globals:
            return f"its code or guards name {name}, which torch's saved frame does not hold"
    runtime_env = dataclasses.replace(env, import_sources=imports)
    compiled._artifacts = dataclasses.replace(artifacts, runtime_env=runtime_env)
    return None


@contextlib.contextmanager
def _builtins_kept() -> Iterator[None]:
    """torch before 2.12 leaves the builtins a frame's code names (transformers' `type(...)`) out of the
    globals it saves with the frame, and its own check then refuses the frame ("Missing required external
    references: ['type']"): while a frame is compiled ahead of time they are added, as later torch does
    (where it did, nothing is left to add)."""
    from torch._dynamo import convert_frame

    capture = getattr(convert_frame, "GraphCaptureOutput", None)
    if capture is None:
        yield
        return
    original = capture.get_runtime_env

    def with_builtins(self: Any) -> Any:
        env = original(self)
        for ref in getattr(env, "external_refs", ()):
            if ref in env.used_globals:
                continue
            if ref.startswith("__builtins_dict__") and ref in self.f_globals:
                env.used_globals[ref] = {k: v for k, v in self.f_globals[ref].items() if _picklable(v)}
            elif ref not in self.f_globals and hasattr(builtins, ref):
                env.used_globals[ref] = getattr(builtins, ref)
        return env

    capture.get_runtime_env = with_builtins
    try:
        yield
    finally:
        capture.get_runtime_env = original


def _picklable(value: Any) -> bool:
    import pickle

    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True


def _installed_by_dynamo(name: str) -> bool:
    """A global Dynamo put in the function's globals for its code (`___module_…`, `__subclass_…_3`), not
    the program's own; the builtins it names `__builtins_dict___N` a served frame installs again."""
    return name.startswith("___") or (
        name.startswith("__") and not name.endswith("__") and not name.startswith("__builtins_dict__")
    )


def _slimmed(saved: bytes, held: dict[str, Any]) -> bytes:
    """torch's saved frame without what serving does not need: the text of every module a function the
    trace inlined is in (torch keeps it whole; the frame's checks hold each function's digest), the compiled
    Triton kernels its graphs do not launch (graphs.keep_launched) and the text of their cache keys. Read
    and written again as torch does; as it was where anything is not as expected. Capture only: the user's
    own program's frame."""
    import pickle

    from torch._dynamo import aot_compile

    try:
        state = frames.saved_state(saved, held)
        sources = state["source_info"]
        sources.inlined_sources = {dataclasses.replace(s, content="") for s in sources.inlined_sources}
        deserialize, inner = state["compiled_fn"]
        bundled = pickle.loads(inner)  # (the AOTAutograd entry, Triton kernels, their constant arguments)
        entry = bundled[0]
        sides = (getattr(entry, "compiled_fw", None), getattr(entry, "compiled_bw", None))
        for result in [getattr(side, "result", None) for side in sides]:
            graphs.keep_launched(result)
            if getattr(result, "_fx_graph_cache_debug_lines", None):  # its cache key's text: for logs only
                result._fx_graph_cache_debug_lines = None  # type: ignore[union-attr]
        state["compiled_fn"] = (deserialize, pickle.dumps(bundled))
        out = io.BytesIO()
        pickler = aot_compile.AOTCompilePickler(held, out)
        pickler.dump(state)
        return saved if getattr(pickler, "errors", None) else out.getvalue()
    except Exception:  # another torch's layout: shipped whole
        return saved


def _arguments(code: types.CodeType, f_locals: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A frame's arguments as its function was called with them (before it ran, its locals are they)."""
    import inspect

    names = code.co_varnames
    positional = names[: code.co_argcount]
    keyword = names[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
    extra = code.co_argcount + code.co_kwonlyargcount
    args = tuple(f_locals[n] for n in positional)
    kwargs = {n: f_locals[n] for n in keyword}
    if code.co_flags & inspect.CO_VARARGS:
        args += tuple(f_locals[names[extra]])
        extra += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        kwargs.update(f_locals[names[extra]])
    return args, kwargs
