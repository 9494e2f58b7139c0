"""torch.compile's first call without Dynamo's trace: capture saves each frame Dynamo compiled as one whole
graph, with torch's own ahead-of-time compile of it (`aot_compile_fullgraph`: the transformed bytecode, the
compiled graph and the guards that can be saved), and a served process installs a bundle's frame as
Dynamo's cache entry for that function at its first call, where the frame's checks hold (frame_file.py):
no trace, no guard building from a trace, no graph look-up.

Both act in Dynamo's frame callback (`CatchErrorsWrapper.__call__`), which Dynamo calls for a function
whose cache holds nothing that fits. Served: a frame is loaded for the function's code (by module and
qualified name) only when its code, the settings it compiled under and the source of every function it
inlined are the same here, and each object it guarded by identity is described the same; its guards,
with those identity checks added, must hold for the call's arguments. Anything else, or anything that
fails, and Dynamo traces as it would without the bundle (the graph caches serve what it compiles).
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools
import hashlib
import io
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuned_kernels.errors import one_line, warn
from tuned_kernels.inductor_edge import frame_file, frame_sources
from tuned_kernels.post_import import when_import_done

GUARDS = "its guards do not hold"  # why not, for this call's arguments (another call's may fit)
CHANGING = (GUARDS, "G[", "L[")  # ... or for what a global or an argument holds now
# a bundle's fault, said in one line; any other reason is the program's own (it differs from the capture's),
# counted in the summary (`first_reason`), where the graph caches then serve or Inductor's own line says why
FAULTS = ("damaged", "torch could not load it")
# differ per process, not in what a frame computes (the choices hook: tuned-kernels' own, see hooks.py)
LEFT_OUT = frozenset({"inductor_choices_class", "debug_dir_root"})


@dataclass
class Offered:
    """A bundle's frame: its function's name and a reader of its file (its bytes, or None and why not)."""

    name: str  # module.qualname of the traced function
    read: Callable[[], tuple[bytes | None, str | None]]
    source: str  # the bundle's name
    loaded: Any = None  # (checks, torch's artifacts) once read and loaded


@dataclass
class _State:
    capture_folder: Path | None = None
    capture: Capture | None = None
    offered: dict[str, list[Offered]] = field(default_factory=dict)
    served: int = 0
    traced: dict[str, int] = field(default_factory=dict)  # why a frame offered was not served, counted
    said: set[str] = field(default_factory=set)
    original: Any = None
    settings: dict[int, tuple[Any, str]] = field(default_factory=dict)  # backend id -> (backend, digest)


_state = _State()


Capture = Callable[[Any, Any, Path], None]  # (Dynamo's callback, a frame it compiled, the folder): saves it


def capture_when_imported(folder: Path, capture: Capture) -> None:
    """Once Dynamo is imported, each frame it compiles whole is also saved into `folder` (frame_capture.py)."""

    def start(_: Any) -> None:
        _state.capture_folder, _state.capture = folder, capture
        _patch()

    when_import_done("torch._dynamo.convert_frame", start)


def serve_when_imported(offered: Sequence[Offered]) -> None:
    """Once Dynamo is imported, a function's first call looks for its frame among `offered` first."""
    if offered:
        when_import_done("torch._dynamo.convert_frame", lambda _: serve(offered))


def serve(offered: Sequence[Offered]) -> None:
    """From now on a function's first call looks for its frame among `offered` before Dynamo traces it."""
    for frame in offered:
        _state.offered.setdefault(frame.name, []).append(frame)
    if offered:
        _patch()


def served() -> int:
    return _state.served


def traced() -> dict[str, int]:
    """Why frames the bundles offered were traced instead, and how many times (in the order first met)."""
    return dict(_state.traced)


def stop() -> None:
    global _state
    if _state.original is not None:
        from torch._dynamo import convert_frame

        convert_frame.CatchErrorsWrapper.__call__ = _state.original  # type: ignore[method-assign]
    _state = _State()


def _patch() -> None:
    from tuned_kernels.inductor_edge.shapes import DYNAMO_FRAMES
    from tuned_kernels.internals import holds

    if _state.original is not None or not holds(DYNAMO_FRAMES[0]):
        return
    from torch._dynamo import convert_frame

    original = convert_frame.CatchErrorsWrapper.__call__
    _state.original = original

    def frame_callback(self: Any, frame: Any, cache_entry: Any, frame_state: Any) -> Any:
        if _state.offered:
            found = _serve(self, frame)
            if found is not None:
                return found
        result = original(self, frame, cache_entry, frame_state)
        saving = _state.capture_folder is not None and _state.capture is not None
        if saving and getattr(result, "guarded_code", None) is not None:
            _state.capture(self, frame, _state.capture_folder)  # type: ignore[misc, arg-type]
        return result

    convert_frame.CatchErrorsWrapper.__call__ = frame_callback  # type: ignore[method-assign]


def torch_can() -> bool:
    """Whether this torch saves and loads frames as this edge expects (asked once Dynamo is imported)."""
    from tuned_kernels.inductor_edge.shapes import DYNAMO_FRAMES
    from tuned_kernels.internals import holds

    return all(holds(shape) for shape in DYNAMO_FRAMES[1:])


def name_of(frame: Any) -> str:
    code = frame.f_code
    return f"{frame.f_globals.get('__name__')}.{getattr(code, 'co_qualname', code.co_name)}"


# -- serving -------------------------------------------------------------------------------------------------


def _serve(wrapper: Any, frame: Any) -> Any:
    """Dynamo's result for this call from the first offered frame that fits it (None: none fits, and Dynamo
    traces; a damaged frame said once per function and reason)."""
    candidates = _state.offered.get(name_of(frame))
    if not candidates or not torch_can():
        return None
    missed = []
    for offered in list(candidates):
        try:
            found, why = _load(offered, wrapper, frame)
        except Exception as exc:  # a frame torch cannot load here: Dynamo traces
            found, why = None, f"torch could not load it: {one_line(f'{type(exc).__name__}: {exc}', 160)}"
        if found is not None:
            _state.served += 1
            return found
        missed.append((offered, why))
        if not why.startswith(CHANGING):  # what differs for good: not asked again
            candidates.remove(offered)
    for _, why in missed:
        _state.traced[why] = _state.traced.get(why, 0) + 1
    offered, why = next(((o, w) for o, w in missed if w.startswith(FAULTS)), missed[0])
    said = f"Dynamo frame {offered.name} from {offered.source} not served: {why}; Dynamo traces it"
    if why.startswith(FAULTS) and said not in _state.said:
        _state.said.add(said)
        with contextlib.suppress(Warning):
            warn(said)
    return None


def _load(offered: Offered, wrapper: Any, frame: Any) -> tuple[Any, str]:
    """Dynamo's result for this frame from `offered` (None and why not)."""
    if offered.loaded is None:
        data, unread = offered.read()
        if data is None:
            return None, f"damaged ({unread})"
        try:
            checks, compiled = frame_file.read(data)
        except ValueError as exc:
            return None, f"damaged ({exc})"
        why = _differs(checks, wrapper, frame)
        if why is not None:
            return None, why
        held = external_objects(frame.f_code, getattr(frame, "closure", None), frame.f_globals)
        artifacts = _artifacts(compiled, held)
        artifacts.check_compatibility()
        guards = guards_state(artifacts.guards_state)
        if not frame_sources.marked(guards.output_graph, checks.marks):
            return None, "damaged (a dimension mark names no tensor of its guards)"
        offered.loaded = (checks, artifacts, guards)
    checks, artifacts, guards = offered.loaded
    _install_globals(artifacts, guards, frame.f_globals)
    unheld = next(iter(unheld_globals(artifacts, frame.f_globals)), None)
    if unheld is not None:
        return None, f"its code names {unheld}, which nothing here holds"
    identities = frame_sources.IdentityChecks(checks.identities, frame.f_globals)
    why = identities.differs(frame.f_locals)
    if why is not None:
        return None, why
    frame_sources.fill_checked(guards.output_graph, checks, frame.f_locals, frame.f_globals)
    guard_manager = _guard_manager(artifacts, guards, checks, frame, identities)
    if not guard_manager.check(frame.f_locals):
        return None, f"{GUARDS} for this call"
    from torch._dynamo.types import GuardedCode, wrap_guarded_code
    from torch._guards import CompileId

    _as_dynamos_own(artifacts.runtime_env.bytecode, frame.f_code)
    guarded = GuardedCode(
        artifacts.runtime_env.bytecode, guard_manager, CompileId(frame_id=0, frame_compile_id=0)
    )
    return wrap_guarded_code(guarded), ""


def guards_state(saved: bytes) -> Any:
    """The frame's saved guards, read. Reading one that names a module as Dynamo imports it
    (`__import__('transformers.utils')`, an `ImportSource`) adds that module's identity guard to the trace
    under way, which outside one fails (torch 2.13); it is read inside a trace of its own, whose guards go
    unused (the frame's identity checks hold each module's)."""
    from torch._dynamo.package import load_guards_state
    from torch._guards import TracingContext, tracing

    with tracing(TracingContext(None)):
        return load_guards_state(saved)


def _as_dynamos_own(bytecode: types.CodeType, code: types.CodeType) -> None:
    """Dynamo's records of the code it made for a function (read when it recompiles, to say why)."""
    from torch._dynamo.convert_frame import output_codes
    from torch._dynamo.utils import orig_code_map

    orig_code_map[bytecode] = code
    output_codes.add(bytecode)


def _differs(checks: frame_file.FrameChecks, wrapper: Any, frame: Any) -> str | None:
    """Why a frame's checks do not hold for this function here (None: they hold)."""
    if frame_file.code_digest(frame.f_code) != checks.code:
        return "the function's code differs from the capture's"
    if settings_digest(wrapper) != checks.settings:
        return "Dynamo's, AOTAutograd's or Inductor's settings differ from the capture's"
    from torch._dynamo.package import _hash_sourcelines

    for module, first, last, digest in checks.sources:
        found = sys.modules.get(module)
        try:
            same = found is not None and _hash_sourcelines(found, first, last) == digest
        except (OSError, TypeError):  # a module without source here
            same = False
        if not same:
            return f"the source of {module} (lines {first}-{last}) differs from the capture's"
    return None


def _guard_manager(
    artifacts: Any,
    guards: Any,
    checks: frame_file.FrameChecks,
    frame: Any,
    identities: frame_sources.IdentityChecks,
) -> Any:
    """The frame's saved guards, built against this function's globals (where its compiled graph is
    installed, as Dynamo installs it), with the identity checks added."""
    import torch
    from torch._dynamo.package import load_guard_manager

    scope = frame.f_globals
    scope[artifacts.backend_id] = torch._dynamo.disable(artifacts.compiled_fn)  # type: ignore[no-untyped-call]
    manager = load_guard_manager(guards, frame.f_code, scope)
    if checks.identities:  # one guard for them all: each guard is a call from Dynamo's C++ at every call
        said = [f"{source}: {expected} (tuned-kernels)" for source, expected in checks.identities]
        manager.root.add_lambda_guard(identities.holds, said, None)
    return manager


def _install_globals(artifacts: Any, guards: Any, scope: Any) -> None:
    """What the frame's bytecode and guards name by Dynamo's aliases, into the function's globals where
    Dynamo's own trace would put them: modules (`__import_torch_dot_nn`) and the builtins
    (`__builtins_dict___2`)."""
    import importlib

    for alias, module in artifacts.runtime_env.import_sources.items():
        if alias not in scope:
            scope[alias] = importlib.import_module(module)
    builtins_name = getattr(guards.output_graph, "name_of_builtins_dict_key_in_fglobals", None)
    if builtins_name and builtins_name not in scope:
        from torch._dynamo.output_graph import get_builtins_dict

        scope[builtins_name] = get_builtins_dict(scope)


@functools.lru_cache(maxsize=64)
def global_names(code: types.CodeType) -> frozenset[str]:
    """The globals a code object (and the code objects it holds) loads by name (read once per code: a
    frame's guards are checked again at each call whose cache entries miss)."""
    import dis

    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= global_names(constant)
    return frozenset(names)


def unheld_globals(artifacts: Any, scope: Any) -> list[str]:
    """The globals a saved frame's code loads that neither `scope` nor the builtins hold (its compiled graph
    aside, which is installed with its guards), in order."""
    return sorted(
        name
        for name in global_names(artifacts.runtime_env.bytecode)
        if name not in scope and not hasattr(builtins, name) and name != artifacts.backend_id
    )


def external_objects(code: types.CodeType, closure: Any, f_globals: Any) -> dict[str, Any]:
    """What a frame's closure and globals hold that torch's pickle of it cannot save, by where it is held:
    modules (`wrap_inline`'s for a torch.compile'd `nn.Sequential`, a global layer a function calls) and
    functions their module does not name as they are (a decorator's inner function: `functools.wraps`
    gives the wrapper its name, so the name finds the wrapper), also through the cells of nested functions
    (decorators' wrappers). A frame names each and is given the one this function holds there when it
    loads."""
    held: dict[str, Any] = {}
    for name, cell in zip(code.co_freevars, closure or (), strict=False):
        _external(f"cell {name}", _contents(cell), held, set())
    for name, value in dict(f_globals).items():
        _external(f"global {name}", value, held, set())
    return held


MAX_WRAPPERS = 8  # nested functions walked through, cell within cell


def _external(where: str, value: Any, held: dict[str, Any], seen: set[int]) -> None:
    import torch

    if isinstance(value, torch.nn.Module):
        held[where] = value
    elif not isinstance(value, types.FunctionType) or id(value) in seen or len(seen) >= MAX_WRAPPERS:
        return
    elif "<locals>" in value.__qualname__:  # pickled with its closure: what its cells hold, in turn
        for name, cell in zip(value.__code__.co_freevars, value.__closure__ or (), strict=False):
            _external(f"{where}/cell {name}", _contents(cell), held, seen | {id(value)})
    elif not _named_as_it_is(value):
        held[where] = value


def pickled_as_missing(value: Any) -> bool:
    """Whether torch's saved guards hold `value` as missing (a function its module names otherwise)."""
    return (
        isinstance(value, types.FunctionType)
        and "<locals>" not in value.__qualname__
        and not (_named_as_it_is(value))
    )


def _named_as_it_is(function: types.FunctionType) -> bool:
    """Whether `module.qualname` finds this very function (as pickle looks it up)."""
    found: Any = sys.modules.get(function.__module__)
    for part in function.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is function


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def saved_state(saved: bytes, held: dict[str, Any]) -> dict[str, Any]:
    """torch's saved frame unpickled as torch does, the objects outside it (`external_objects`) from `held`:
    its parts as saved, none of them loaded."""
    from torch._dynamo import aot_compile

    return aot_compile.AOTCompileUnpickler(held, io.BytesIO(saved)).load()  # type: ignore[no-any-return]


def _artifacts(compiled: bytes, held: dict[str, Any]) -> Any:
    """torch's saved frame, loaded as `AOTCompiledFunction.deserialize` loads it, without building its
    guards against a copy of the globals (they are built against the function's own)."""
    import torch
    from torch._dynamo import aot_compile
    from torch._dynamo.package import SerializedCode

    state = saved_state(compiled, held)
    env = state["runtime_env"]
    state["runtime_env"] = dataclasses.replace(env, bytecode=SerializedCode.to_code_object(env.bytecode))
    deserialize, saved = state["compiled_fn"]
    with torch._inductor.config.patch(enable_autograd_for_aot=True):
        state["compiled_fn"] = deserialize(saved)
    state["original_code"] = SerializedCode.to_code_object(state["original_code"])
    return aot_compile.CompileArtifacts(**state)


def settings_digest(wrapper: Any) -> str:
    """A digest of the settings a frame compiles under: Dynamo's, AOTAutograd's, and Inductor's with the
    options of this `torch.compile` (its mode); once per backend."""
    from torch._dynamo.eval_frame import innermost_backend

    backend = innermost_backend(wrapper)
    known = _state.settings.get(id(backend))
    if known is not None and known[0] is backend:
        return known[1]
    import json

    from torch._dynamo import config as dynamo
    from torch._functorch import config as functorch
    from torch._inductor import config as inductor

    with inductor.patch(getattr(backend, "config", None) or {}):
        inductor_settings = inductor.save_config_portable()
    parts = {
        "backend": f"{type(backend).__module__}.{type(backend).__qualname__}",
        "dynamo": frame_file.portable(dynamo.save_config_portable(), LEFT_OUT),
        "functorch": frame_file.portable(functorch.save_config_portable(), LEFT_OUT),
        "inductor": frame_file.portable(inductor_settings, LEFT_OUT),
    }
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    _state.settings[id(backend)] = (backend, digest)
    return digest
