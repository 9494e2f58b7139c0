"""A torch.compile'd function's first call runs no Dynamo trace where a bundle holds its saved frame: capture
saves each frame Dynamo compiled whole, and a served process loads it at the function's first call, with
the guards Dynamo saved and a check of each object Dynamo guarded by identity. A program whose globals,
code or settings differ from the capture's is traced as without the bundle, and answers as eager PyTorch.

Real processes on the CPU (Inductor's C++ back end), and the frame file's checks as tables."""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import pickle
import shutil
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tests import factories, forked_python
from tuned_kernels import model
from tuned_kernels.inductor_edge import frame_file, frame_sources, frames, graphs
from tuned_kernels.results import read_results, write_results

APP = Path(__file__).parent / "corpora" / "frame_app.py"
OPS = APP.with_name("frame_ops.py")  # the library whose operator the program calls
SERVED_WHOLE = "3 loaded with their Dynamo frames (no trace), 0 found in Inductor's cache, 0 compiled here"


@dataclasses.dataclass(frozen=True)
class Run:
    frames: dict[str, int]  # Dynamo's frames traced, Inductor's graph look-ups (the outputs checked vs eager)
    warnings: list[str]
    stderr: str


def run_app(folder: Path, *, bundle: Path | None = None, capture: Path | None = None, **extra: str) -> Run:
    """frame_app.py (unless `folder` holds an edited one) and the library it calls, copied into `folder` and
    run there, with `folder` as HOME and empty Inductor, Triton and overlay caches of its own; served
    verbosely from `bundle`."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "frame_app.py"
    if not script.exists():
        shutil.copyfile(APP, script)
    shutil.copyfile(OPS, folder / OPS.name)
    env = factories.program_environment(folder) | extra
    if bundle is not None:
        env |= {"TUNED_KERNELS": "1", "TUNED_KERNELS_PATH": str(bundle), "TUNED_KERNELS_VERBOSE": "1"}
    command = [sys.executable, str(script)]
    if capture is not None:
        command = [sys.executable, "-m", "tuned_kernels", "capture", "-o", str(capture), "--", *command]
    done = forked_python.run(command, env=env, cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    frames = json.loads(done.stdout.split("FRAMES ", 1)[1].splitlines()[0])
    return Run(frames, factories.warnings_in(done.stderr), done.stderr)


@pytest.fixture(scope="module")
def capture_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run]:
    bundle = tmp_path_factory.mktemp("capture") / "block.pb.zst"
    return bundle, run_app(bundle.parent / "program", capture=bundle)


@pytest.fixture(scope="module")
def captured(capture_run: tuple[Path, Run]) -> Path:
    return capture_run[0]


def _frames(results: model.Results) -> list[model.Entry]:
    return [e for e in results.entries if dict(e.best.kwargs).get(graphs.KIND) == graphs.FRAME]


def test_capture_saves_each_frame_dynamo_compiled_whole(captured: Path) -> None:
    """The forward, compiled with `ACT` torch.relu, then again once the program rebound it, and the function
    through which Dynamo traces an `nn.Sequential` (a closure holding it)."""
    functions = sorted(dict(e.best.kwargs)[graphs.FUNCTION] for e in _frames(read_results(captured)))
    assert functions == [
        *["__main__.Block.forward"] * 2,
        "torch._dynamo.external_utils.wrap_inline.<locals>.inner",
    ]


def test_each_frame_is_compiled_from_the_graph_the_programs_own_compile_put_in_inductors_cache(
    capture_run: tuple[Path, Run],
) -> None:
    """Not compiled afresh: the kernels a frame launches are those the program's run tuned (and the bundle
    ships tuned). Two frames are saved before the program reads its counters: each found its forward graph
    in the cache; the program's own two look-ups missed, as a first compile does, and so did each frame's
    backward (compiled and written where the program's own compile of it would look; a training step's
    backward then finds it: the README's train.py)."""
    _, run = capture_run
    assert run.frames == {"traced": 2, "fxgraph_hits": 2, "fxgraph_misses": 4}
    assert not [w for w in run.warnings if "not saved" in w]


def test_a_backward_the_program_never_ran_is_shipped_in_its_frame_only(capture_run: tuple[Path, Run]) -> None:
    """The frames' compile wrote each backward to Inductor's cache for the program's own backward to find;
    this program runs none, so the bundle holds the program's 3 forward graphs and no backward beside them."""
    _, run = capture_run
    assert "3 Dynamo frames, 3 FX-graph entries," in run.stderr


def test_a_served_first_call_runs_no_dynamo_trace_and_answers_as_eager(
    captured: Path, tmp_path: Path
) -> None:
    served = run_app(tmp_path / "elsewhere", bundle=captured)
    assert served.frames == {"traced": 0, "fxgraph_hits": 0, "fxgraph_misses": 0}
    assert f"torch.compile graphs: {SERVED_WHOLE}; bundle files" in served.stderr
    assert not [w for w in served.warnings if "not served" in w or "compiled graph from" in w]


def test_a_frame_compiled_for_a_dimension_marked_dynamic_serves_another_size_of_it(
    tmp_path: Path,
) -> None:
    """torch's saved guards drop a tensor's dimension marks (`mark_dynamic`), and a tensor marked as the
    capture's then fails them; put back, frames captured on a marked batch of 4 rows serve one of 7."""
    bundle = tmp_path / "dynamic.pb.zst"
    run_app(tmp_path / "program", capture=bundle, FRAME_APP_BATCH="4")
    served = run_app(tmp_path / "seven", bundle=bundle, FRAME_APP_BATCH="7")
    assert served.frames == {"traced": 0, "fxgraph_hits": 0, "fxgraph_misses": 0}
    assert f"torch.compile graphs: {SERVED_WHOLE}; bundle files" in served.stderr


def test_a_value_guarded_under_a_function_torchs_saved_guards_cannot_hold_is_checked_as_captured(
    tmp_path: Path,
) -> None:
    """A forward behind a `functools.wraps` decorator whose wrapper reads an attribute of the function it
    wraps: torch's saved guards hold that function as missing, so the guard on the attribute is built from
    the served function's own and would hold whatever it is; tuned-kernels checks the captured value. The
    frame is loaded where the attribute is as captured, and traced, answering as eager, where it is not."""
    app = Path(__file__).parent / "corpora" / "wrapped_forward_app.py"

    def run(folder: Path, *command: str, **extra: str) -> subprocess.CompletedProcess[str]:
        folder.mkdir()
        env = factories.program_environment(folder) | extra
        done = forked_python.run(command, env=env, cwd=folder, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
        return done

    bundle = tmp_path / "wrapped.pb.zst"
    captured = run(tmp_path / "capture", sys.executable, "-m", "tuned_kernels", "capture", "-o", str(bundle),
                   "--", sys.executable, str(app))  # fmt: skip
    assert "1 Dynamo frame, " in captured.stderr, captured.stderr[-2000:]
    serving = {"TUNED_KERNELS": "1", "TUNED_KERNELS_PATH": str(bundle), "TUNED_KERNELS_VERBOSE": "1"}
    same = run(tmp_path / "same", sys.executable, str(app), **serving)
    assert '"traced": 0' in same.stdout and "1 loaded with their Dynamo frames" in same.stderr
    changed = run(tmp_path / "changed", sys.executable, str(app), WRAPPED_APP_SCALE="3", **serving)
    assert '"traced": 1' in changed.stdout
    assert "(the first: L['func'].scale is not float 2.0)" in changed.stderr, changed.stderr[-2000:]


def test_with_frames_off_dynamo_traces_and_the_graph_caches_serve(captured: Path, tmp_path: Path) -> None:
    served = run_app(tmp_path / "off", bundle=captured, TUNED_KERNELS_FRAMES="0")
    assert served.frames == {"traced": 2, "fxgraph_hits": 2, "fxgraph_misses": 0}
    assert not [w for w in served.warnings if "compiled graph from" in w]  # each graph file placed as it
    # came, those the frames' compile wrote too (a graph file refused is one such line)


def test_a_global_guarded_by_identity_that_differs_is_traced_and_answers_as_eager(
    captured: Path, tmp_path: Path
) -> None:
    """The capture's `ACT` was torch.relu, then torch.sigmoid; Dynamo's own saved frames drop that guard and
    would run one of them."""
    served = run_app(tmp_path / "tanh", bundle=captured, FRAME_APP_ACT="tanh")
    assert served.frames["traced"] == 2  # the block, and the Sequential (whose trace inlines the block)
    assert not [w for w in served.warnings if "not served" in w]  # the program's own: said in the summary
    assert "Dynamo frames offered and traced instead: " in served.stderr
    assert "(the first: G['ACT'] is not builtin torch._VariableFunctionsClass." in served.stderr


def test_an_edited_function_is_traced_and_answers_as_eager(captured: Path, tmp_path: Path) -> None:
    folder = tmp_path / "edited"
    folder.mkdir()
    (folder / "frame_app.py").write_text(
        APP.read_text().replace("return fn(y) * by.value", "return fn(y) * by.value + 1")
    )
    served = run_app(folder, bundle=captured)
    assert served.frames["traced"] == 2
    assert "(the first: the source of __main__ (lines " in served.stderr


def test_a_frame_torch_cannot_load_is_one_line_and_traced(captured: Path, tmp_path: Path) -> None:
    def damaged(data: bytes) -> bytes:
        checks, compiled = frame_file.read(data)
        return frame_file.write(checks, compiled[: len(compiled) // 2])

    bundle = tmp_path / "damaged.pb.zst"
    write_results(bundle, _with_frame_bytes(read_results(captured), damaged))
    served = run_app(tmp_path / "damaged", bundle=bundle)
    assert served.frames["traced"] == 2
    said = [w for w in served.warnings if "not served" in w]
    assert len(said) == 2 and all("not served: torch could not load it: " in w for w in said), said


def test_a_frame_whose_saved_guards_torch_cannot_read_back_is_not_shipped(tmp_path: Path) -> None:
    """torch 2.11 writes guards it cannot read back (BERT's, on an H200): capture reads each frame's back,
    says why one fails and ships none of it; served, Dynamo traces with no word and the graph caches serve."""
    bundle = tmp_path / "bundle.pb.zst"
    unloadable = {"FRAME_APP_GUARDS_UNLOADABLE": "1"}
    captured = run_app(tmp_path / "capture", capture=bundle, **unloadable)
    said = [w for w in captured.warnings if "not saved" in w]
    assert said and all(
        "torch cannot read its saved guards back (TypeError: DefaultsSource" in w for w in said
    )
    assert _frames(read_results(bundle)) == []
    served = run_app(tmp_path / "served", bundle=bundle, **unloadable)
    assert not [w for w in served.warnings if "not served" in w] and "frames offered" not in served.stderr
    assert served.frames["fxgraph_misses"] == 0 and served.frames["fxgraph_hits"] >= 1


class _Payload:
    """Unpickled, it creates the file it names: what a bundle's author could put in a frame."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return eval, (f"__import__('pathlib').Path({self.marker!r}).touch()",)


def test_frames_of_a_bundle_others_can_write_are_never_unpickled(captured: Path, tmp_path: Path) -> None:
    """A frame is code: from a bundle file someone else could have replaced, the configs only are served
    (one line), nothing of a frame is unpickled, and Dynamo traces."""
    marker = tmp_path / "payload-ran"

    def planted(data: bytes) -> bytes:
        return frame_file.write(frame_file.read(data)[0], pickle.dumps(_Payload(marker), protocol=4))

    bundle = tmp_path / "shared" / "hostile.pb.zst"
    bundle.parent.mkdir()
    write_results(bundle, _with_frame_bytes(read_results(captured), planted))
    bundle.parent.chmod(0o777)
    served = run_app(tmp_path / "served", bundle=bundle)
    assert not marker.exists()
    assert served.frames["traced"] == 2
    assert [w for w in served.warnings if "serving only the configs of" in w], served.warnings


def _with_frame_bytes(results: model.Results, edit: Callable[[bytes], bytes]) -> model.Results:
    """`results` with each frame file edited and its digest made to match (as a bundle's author could)."""
    blobs = dict(results.blobs)
    entries = list(results.entries)
    for frame in _frames(results):
        (artifact,) = frame.artifacts
        (stored,) = artifact.files
        data = edit(results.blobs[stored.sha256])
        sha = hashlib.sha256(data).hexdigest()
        blobs[sha] = data
        file = model.ArtifactFile(stored.name, sha, len(data))
        edited = dataclasses.replace(artifact, cache_key=sha, files=(file,))
        entries[entries.index(frame)] = dataclasses.replace(frame, artifacts=(edited,))
    return dataclasses.replace(results, entries=tuple(entries), blobs=blobs)


def _code(source: str, filename: str) -> types.CodeType:
    namespace: dict[str, object] = {}
    exec(compile(source, filename, "exec"), namespace)
    function = namespace["f"]
    assert isinstance(function, types.FunctionType)
    return function.__code__


def test_a_codes_digest_leaves_out_its_file_and_lines_and_keeps_what_it_does() -> None:
    body = "def f(x):\n    return g(x * 2, {'a', 'b'})\n"
    digest = frame_file.code_digest(_code(body, "/here/app.py"))
    assert frame_file.code_digest(_code("\n\n" + body, "/elsewhere/app.py")) == digest
    assert frame_file.code_digest(_code(body.replace("2", "3"), "/here/app.py")) != digest
    assert frame_file.code_digest(_code(body.replace("g(", "h("), "/here/app.py")) != digest


class Verdict(enum.Enum):
    SERVED = 1


def _holding(held: object) -> types.FunctionType:
    def inner() -> object:
        return held

    return inner  # type: ignore[return-value]


def _itself() -> types.FunctionType:
    def again(n: int) -> int:
        return again(n - 1) if n else 0

    return again  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("value", "described"),
    [
        (None, "None"),
        (json, "module json"),
        (Path, "class pathlib.Path"),
        (len, "builtin builtins.len"),
        (torch._C._get_tracing_state, "builtin torch._C._get_tracing_state"),  # pybind11's: bound to a record
        ("relu", None),  # a string: guarded by value, never by identity
        (str.upper, "descriptor builtins.str.upper"),
        (_holding(object()), None),  # a cell holding an instance: not described
        (_holding(Verdict.SERVED), "cell held=enum member tests.test_frames.Verdict.SERVED"),
        (_holding(1), "cell held=int 1"),
        (_holding((1, "a")), "cell held=tuple (int 1, str 'a')"),
        (_holding(["value"]), "cell held=list (str 'value')"),  # register_dataclass's field names
        (_holding([object()]), None),
        (_holding({"use_cache": False}), "cell held=dict (str 'use_cache': bool False)"),  # keyword arguments
        (_holding({"layer": object()}), None),
        (Verdict.SERVED, "enum member tests.test_frames.Verdict.SERVED"),
        ([].append, None),  # a method bound to an instance
        (torch.ops.aten.add, "operator aten::add"),  # each process's registry makes its own object
        (torch.ops.aten.add.Tensor, "operator aten::add, overload Tensor"),
        (torch.ops.aten.relu.default, "operator aten::relu, overload default"),
        (object(), None),
    ],
)
def test_what_an_object_guarded_by_identity_is_described_as(value: object, described: str | None) -> None:
    said = frame_file.describe(value)
    if isinstance(value, types.FunctionType):  # a closure: the function, then what each of its cells holds
        named = f"function {value.__module__}.{value.__qualname__} {frame_file.code_digest(value.__code__)}"
        assert said == (None if described is None else f"{named}; {described.removeprefix('cell ')}")
    else:
        assert said == described


def test_a_closure_whose_cell_holds_itself_names_it_there() -> None:
    again = _itself()
    named = f"function {again.__module__}.{again.__qualname__} {frame_file.code_digest(again.__code__)}"
    assert frame_file.describe(again) == f"{named}; again={named} (met above)"


def test_a_code_object_is_described_by_its_name_and_what_it_does() -> None:
    code = _frames.__code__
    assert frame_file.describe(code) == f"code _frames {frame_file.code_digest(code)}"


def test_a_function_is_described_by_its_name_and_code() -> None:
    described = frame_file.describe(_frames)
    assert described == f"function tests.test_frames._frames {frame_file.code_digest(_frames.__code__)}"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not a frame",
        frame_file.MAGIC + b"{" * 10,  # its checks never end
        frame_file.MAGIC + b"[]\n",
        frame_file.MAGIC + b'{"module": 1}\n',
        frame_file.MAGIC + json.dumps({"module": "m", "qualname": "f", "code": "c", "settings": "s",
                                       "identities": [], "sources": [["m", -1, 2, "h"]]}).encode() + b"\n",
        frame_file.MAGIC + json.dumps({"module": "m", "qualname": "f", "code": "c", "settings": "s",
                                       "identities": [], "sources": [],
                                       "marks": [["L['x']", "__class__", [0]]]}).encode() + b"\n",
    ],
)  # fmt: skip
def test_a_frame_file_that_does_not_read_is_refused_before_anything_is_unpickled(data: bytes) -> None:
    with pytest.raises(ValueError):
        frame_file.read(data)


def test_a_frame_file_reads_back_as_written() -> None:
    checks = frame_file.FrameChecks("m", "C.f", "c" * 64, "s" * 64, (("G['ACT']", "module torch"),),
                                    (("m", 3, 5, "h" * 64),),
                                    (("L['x']", "_dynamo_dynamic_indices", (0, 2)),))  # fmt: skip
    assert frame_file.read(frame_file.write(checks, b"\x80torch")) == (checks, b"\x80torch")


@pytest.mark.parametrize(
    ("forward", "backward", "saved"),
    [
        ([True], [], True),
        ([True], [False], True),  # a backward the program has not run yet: written for its own compile
        ([True, True], [True, False], True),
        ([False], [], False),  # compiled afresh: its kernels would be tuned again where it is served
        ([True, False], [True], False),
        ([], [], False),
    ],
)
def test_a_frame_is_saved_only_where_each_forward_graph_is_the_one_the_program_compiled(
    forward: list[bool], backward: list[bool], saved: bool
) -> None:
    """A fresh compile names its kernels otherwise than the program's compile did, so the configs the
    program's run tuned would fit none of them (on an H200 under max-autotune a frame compiled so ran
    coordinate descent on 4 kernels again at its first call)."""
    from tuned_kernels.inductor_edge.frame_compile import Lookups

    assert (Lookups(forward, backward).why_not_saved() is None) == saved


def test_a_guard_whose_value_torch_did_not_read_is_described_as_the_frame_holds_it() -> None:
    """A guard torch gives no value for is described as the frame holds its source (a builtin reached
    through a module Dynamo imported for the trace, `G['__import_…']`), not refused; one whose source
    finds nothing in the frame is refused, named."""
    from tuned_kernels.inductor_edge.frame_capture import _Guards

    frame = types.SimpleNamespace(f_locals={}, f_globals={"__import_torch": torch})
    for source, identities, unkept in [
        (
            "G['__import_torch']._C._get_tracing_state",
            {"G['__import_torch']._C._get_tracing_state": "builtin torch._C._get_tracing_state"},
            False,
        ),
        ("G['nothing_here'].f", {}, True),
    ]:
        entry = types.SimpleNamespace(
            name=source,
            has_value=False,
            value=object(),
            guard_type="BUILTIN_MATCH",
            derived_guard_types=(),
            orig_guard=types.SimpleNamespace(name=source),
        )
        guards = _Guards({"BUILTIN_MATCH"}, frame)
        assert guards.keep([entry]) == [False]
        assert guards.identities == identities
        assert bool(guards.unkept) == unkept and (not unkept or source in guards.unkept[0])


def test_the_builtins_a_frames_code_names_are_kept_with_it_where_torch_leaves_them_out() -> None:
    """torch before 2.12 saved a frame's globals without the builtins its code names (`type`), and then
    refused to load it; while capture compiles a frame they are added."""
    from torch._dynamo import convert_frame

    from tuned_kernels.inductor_edge.frame_capture import _builtins_kept

    capture = convert_frame.GraphCaptureOutput
    left_out = types.SimpleNamespace(used_globals={}, external_refs={"type", "HELPER"})
    original = capture.get_runtime_env
    capture.get_runtime_env = lambda self: left_out  # type: ignore[method-assign]
    try:
        with _builtins_kept():
            env = capture.get_runtime_env(types.SimpleNamespace(f_globals={"HELPER": 1}))
        assert capture.get_runtime_env(None) is left_out  # as it was, once the compile is over
    finally:
        capture.get_runtime_env = original  # type: ignore[method-assign]
    assert env.used_globals == {"type": type}  # the program's own global is the served function's


def _passed_through(fn: Callable[[int], int]) -> Callable[[int], int]:
    @functools.wraps(fn)
    def wrapper(y: int) -> int:
        return fn(y)

    return wrapper


@_passed_through
def _behind_a_decorator(y: int) -> int:
    return y


def _calling(fn: Callable[[int], int]) -> Callable[[int], int]:
    def calls(y: int) -> int:  # no functools.wraps: named `_calling.<locals>.calls`
        return fn(y)

    return calls


def test_what_a_frame_holds_that_torchs_pickle_cannot_name_is_given_by_where_it_is_held() -> None:
    """torch's pickle names a function by its module and name; a decorator's inner function's name finds
    its wrapper instead (`functools.wraps`). Held in the traced wrapper's own cells or in those of a
    function nested in its globals, it is held outside the frame by where it is, as a module is."""
    import torch

    inner, layer = _behind_a_decorator.__wrapped__, torch.nn.Linear(1, 1)  # type: ignore[attr-defined]
    wrapper = _behind_a_decorator
    in_globals = {"g": _calling(inner), "layer": layer, "named": _frames, "wrapper": wrapper, "n": 1}
    held = frames.external_objects(wrapper.__code__, wrapper.__closure__, in_globals)
    assert held == {"cell fn": inner, "global g/cell fn": inner, "global layer": layer}


def test_dimension_marks_are_put_back_on_the_tensors_their_sources_name_and_refused_where_none() -> None:
    import torch

    scopes = types.SimpleNamespace(local_scope={"x": torch.zeros(2, 3)}, global_scope={})
    assert frame_sources.marked(scopes, [("L['x']", "_dynamo_dynamic_indices", (0,))])
    assert scopes.local_scope["x"]._dynamo_dynamic_indices == {0}
    assert not frame_sources.marked(scopes, [("L['y']", "_dynamo_dynamic_indices", (0,))])


def test_a_saved_frames_code_that_names_a_global_nothing_here_holds_is_found_before_it_runs() -> None:
    def uses() -> object:
        return (___installed_by_dynamo, len, held_here)  # type: ignore[name-defined]  # noqa: F821

    artifacts = types.SimpleNamespace(
        runtime_env=types.SimpleNamespace(bytecode=uses.__code__), backend_id="b"
    )
    assert frames.unheld_globals(artifacts, {"held_here": 1}) == ["___installed_by_dynamo"]


def test_the_identity_checks_hold_while_each_source_holds_an_object_described_as_captured() -> None:
    """One guard for all of a frame's identity checks (Dynamo calls it at every call): it holds while each
    source holds what the capture's did, by description (another object described the same holds too), and
    fails as soon as one source holds something else or nothing."""
    import torch.nn.functional as F

    module = types.SimpleNamespace(act=F.relu)
    scope: dict[str, object] = {"F": F, "module": module}
    identities = [
        ("G['F']", frame_file.described(F)),
        ("G['module'].act", frame_file.described(F.relu)),
        ("L['scale']", frame_file.described(2.0)),
    ]
    holds = frame_sources.IdentityChecks(identities, scope).holds
    assert holds({"scale": 2.0}) and holds({"scale": 2.0})  # the second by identity alone
    assert holds({"scale": float("2.0")})  # another float of the same value
    assert not holds({"scale": 3.0})
    module.act = F.gelu
    assert not holds({"scale": 2.0})
    module.act = F.relu
    assert holds({"scale": 2.0})
    del scope["F"]
    assert not holds({"scale": 2.0})
    assert not holds({})


def test_a_source_that_reads_nothing_alone_never_passes_read_among_the_others() -> None:
    """A source that does not compile on its own (a starred one) finds nothing, so its check fails; read in
    one tuple with the others it may compile and expand to no item, which must not pass for it."""
    import torch.nn.functional as F

    scope: dict[str, object] = {"F": F}
    identities = [("G['F']", frame_file.described(F)), ("*L['e']", frame_file.described(None))]
    holds = frame_sources.IdentityChecks(identities, scope).holds
    assert not holds({"e": []}) and not holds({"e": []})


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("L['x']", [("L['x']", "L", "x")]),
        ("___odict_getitem(L['func'].table, 'k')", [("L['func']", "L", "func")]),
        ("G['a'][L['b']]", [("G['a']", "G", "a"), ("L['b']", "L", "b")]),
        # a subscript of a name that ends in G or L is no global or local of the frame
        (
            "G['__import_losses'].LOSS_MAPPING['ForCausalLM']",
            [("G['__import_losses']", "G", "__import_losses")],
        ),
        ("L['self'].table['G']", [("L['self']", "L", "self")]),
    ],
)
def test_the_locals_and_globals_a_guard_reads_are_found_anywhere_in_its_source(
    source: str, found: list[tuple[str, str, str]]
) -> None:
    assert frame_sources.roots(source) == found
