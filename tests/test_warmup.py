"""The warm-up: as serving starts, a background thread opens the installed bundles and has Triton build the
host modules their compiled kernels need (its driver utilities, a launcher per argument-type list), so the
first launches find them in Triton's cache. It builds only for bundles of this very Triton, through
Triton's own driver classes, counts failures instead of raising them, and never holds up a forked child.
(On the GPU, tests/test_gpu.py checks that a served program then runs no C compiler at all.)"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import sys
import threading
import types
from pathlib import Path
from typing import Any

import pytest
import triton
from tuned_kernels.hardware import compiler_fingerprint, detect
from tuned_kernels.registry import Registry, warmup
from tuned_kernels.registry.warmup import launcher_specs

from tests import factories
from tuned_kernels import model
from tuned_kernels.results import open_results, write_results
from tuned_kernels.triton_edge import host_modules, import_state


def compiled(kernel: str, signature: tuple[str, ...]) -> tuple[model.Entry, dict[str, bytes]]:
    """An entry of `kernel` with a compiled kernel whose launcher takes `signature`."""
    item, blobs = factories.with_artifact(factories.entry(kernel), payload=kernel.encode())
    artifact = dataclasses.replace(item.artifacts[0], host_signature=signature)
    return dataclasses.replace(item, artifacts=(artifact,)), blobs


def bundle(
    path: Path, triton: str, *kernels: tuple[str, tuple[str, ...]], target: model.Target = factories.H100
) -> Path:
    """A bundle of compiled `kernels` (name, argument types) made with Triton `triton` (its version)."""
    entries, blobs = [], {}
    for name, signature in kernels:
        item, more = compiled(name, signature)
        entries.append(item)
        blobs.update(more)
    compiler = dataclasses.replace(compiler_fingerprint(target), triton_version=triton)
    results = factories.results(*entries, target=target, compiler=compiler)
    write_results(path, dataclasses.replace(results, blobs=blobs))
    return path


POINTERS = ("*fp16", "*fp16", "i32", "constexpr")


def test_one_launcher_is_built_per_argument_type_list_of_the_bundles_of_this_triton(tmp_path: Path) -> None:
    """Kernels of the same argument types share a launcher; a kernel with no recorded types is left to
    Triton; a bundle of another Triton version has none of its kernels served, so none is built."""
    ours = bundle(
        tmp_path / "ours.pb", triton.__version__,
        ("pkg.matmul", POINTERS), ("pkg.other_matmul", POINTERS), ("pkg.norm", ("*fp32", "i64")),
        ("pkg.unknown", ()),
    )  # fmt: skip
    foreign = bundle(tmp_path / "foreign.pb", "3.1.0", ("pkg.foreign", ("*bf16",)))
    views = [open_results(ours), open_results(foreign)]
    specs, skipped = host_modules.distinct(launcher_specs(views, triton.__version__))
    assert skipped == 0 and sorted(spec.signature for spec in specs) == [
        ("*fp16", "*fp16", "i32", "constexpr"),
        ("*fp32", "i64"),
    ]
    assert {spec.backend for spec in specs} == {"cuda"}
    assert host_modules.distinct(launcher_specs(views, triton.__version__), limit=1) == (specs[:1], 1)


def test_a_bundle_naming_thousands_of_argument_type_lists_costs_at_most_the_bound_in_c_builds(
    tmp_path: Path,
) -> None:
    """Each distinct argument-type list is a C compile at start-up: a bundle naming 10,000 of them gets
    `MAX_LAUNCHERS` built and the rest counted as skipped (Triton builds one at its first launch, if ever)."""
    kernels = [
        (f"pkg.k{i}", ("*fp16", "i32", *["i64"] * (i % 100), *["*fp32"] * (i // 100))) for i in range(10_000)
    ]
    path = bundle(tmp_path / "many.pb", triton.__version__, *kernels)
    specs, skipped = host_modules.distinct(launcher_specs([open_results(path)], triton.__version__))
    assert len(specs) == host_modules.MAX_LAUNCHERS and skipped == 10_000 - host_modules.MAX_LAUNCHERS


def test_a_kernels_metadata_is_read_only_if_it_is_what_its_sha256_names() -> None:
    """The launch facts a launcher is generated from come from the bundle: bytes that are not the file
    the bundle lists are not used (the launch, as ever, is left to Triton)."""
    item, blobs = compiled("pkg.matmul", POINTERS)
    artifact = item.artifacts[0]
    assert host_modules.launcher_spec(artifact, blobs) is not None
    metadata = next(f for f in artifact.files if f.name.endswith(".json"))
    edited = {**blobs, metadata.sha256: b'{"tensordesc_meta": [{}]}'}
    assert host_modules.launcher_spec(artifact, edited) is None


class FakeDriver(types.ModuleType):
    """A backend's driver module as Triton 3.6 lays it out: `driver.c` beside it (its utilities' source),
    `make_launcher` (a launcher's C source per argument-type list and tensor descriptors), the libraries
    they link and `compile_module_from_src`, which builds and loads them."""

    def __init__(self, folder: Path) -> None:
        super().__init__("fake_triton_driver")
        (folder / "driver.c").write_text("/* utilities */")
        self.__file__ = str(folder / "driver.py")
        self.make_launcher = lambda constants, signature, tensordesc: f"/* {list(signature.values())} */"
        self.compile_module_from_src = self.library_dirs = lambda: []
        self.include_dirs, self.libraries = [], ["libcuda.so.1"]


class Built(list[tuple[str, str]]):
    """The modules built, as (module name, source), and the niceness of the thread that built each."""

    niceness: list[int]


@pytest.fixture
def fake_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Built:
    """Builds are recorded instead of run by a C compiler."""
    driver = FakeDriver(tmp_path)
    monkeypatch.setitem(sys.modules, driver.__name__, driver)
    monkeypatch.setitem(host_modules._DRIVERS, "cuda", (driver.__name__, "cuda_utils", "__triton_launcher"))
    built = Built()
    built.niceness = []

    def compile_into_cache(src: str, name: str, module: Any) -> None:
        assert module is driver
        if "fp64" in src:
            raise RuntimeError("cc: not found")
        built.append((name, src))
        built.niceness.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    monkeypatch.setattr(host_modules, "compile_into_cache", compile_into_cache)
    return built


def spec(signature: tuple[str, ...]) -> host_modules.LauncherSpec:
    return host_modules.LauncherSpec("cuda", signature, {"num_ctas": 1, "tensordesc_meta": None})


def test_triton_builds_its_utilities_once_and_each_launcher_from_the_recorded_types(
    fake_backend: Built,
) -> None:
    report = host_modules.build([spec(POINTERS), spec(("*fp32",))], jobs=2)
    assert (report.built, report.failed) == (3, 0)
    program = os.getpriority(os.PRIO_PROCESS, 0)
    assert fake_backend.niceness == [min(19, program + host_modules.BUILD_NICENESS)] * 3  # compilers inherit
    assert sorted(fake_backend) == [
        ("__triton_launcher", "/* ['*fp16', '*fp16', 'i32', 'constexpr'] */"),
        ("__triton_launcher", "/* ['*fp32'] */"),
        ("cuda_utils", "/* utilities */"),
    ]


def test_a_triton_with_one_generic_launcher_gets_nothing_built(
    fake_backend: Built, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Triton 3.7 on: no launcher per argument-type list, and `cuda_utils` keyed by its install's paths."""
    monkeypatch.delattr(sys.modules["fake_triton_driver"], "make_launcher")
    assert host_modules.build([spec(POINTERS)]) == host_modules.BuildReport()
    assert fake_backend == []


def test_a_module_that_cannot_be_built_is_counted_and_left_to_triton(
    fake_backend: Built,
) -> None:
    report = host_modules.build([spec(POINTERS), spec(("*fp64",))])
    assert (report.built, report.failed, report.first_failure) == (2, 1, "RuntimeError: cc: not found")


def test_under_the_interpreter_nothing_is_built_and_no_thread_started(tmp_path: Path) -> None:
    registry = Registry()
    assert warmup.start(registry) is None and registry.host_modules is None


def test_the_bundles_are_opened_once_by_whichever_thread_asks_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = bundle(tmp_path / "b.pb", triton.__version__, ("pkg.matmul", POINTERS), target=detect())
    monkeypatch.setenv("TUNED_KERNELS_PATH", str(path))
    monkeypatch.setenv("TUNED_KERNELS_CACHE_DIR", str(tmp_path / "overlay"))
    registry = Registry()
    opener = threading.Thread(target=registry.opened_bundles)
    opener.start()
    opener.join()
    registry.load()
    assert registry.opened_bundles().views[str(path)] is registry.load().sources.bundles[0]


def _open_in_child(registry: Registry, answer: Any) -> None:
    answer.put(len(registry.opened_bundles().found))


def test_a_child_forked_while_the_bundles_are_being_opened_opens_them_itself(tmp_path: Path) -> None:
    """A fork while the warm-up holds the bundles' lock: the child does not wait for a thread it lacks."""
    registry = Registry()
    context = multiprocessing.get_context("fork")
    answer = context.SimpleQueue()
    with registry.bundles.lock:  # as the warm-up thread holds it while opening
        child = context.Process(target=_open_in_child, args=(registry, answer))
        child.start()
    child.join(timeout=60)
    assert child.exitcode == 0 and answer.get() == 0


def test_the_warmup_touches_triton_only_once_the_programs_import_of_it_has_finished(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Serving starts from inside `import triton`; importing Triton's modules from the warm-up thread
    meanwhile made the program's own import fail on a half-initialised module (seen on the H100)."""
    half_imported = types.ModuleType("triton")
    half_imported.__spec__ = types.SimpleNamespace(_initializing=True)  # type: ignore[assignment]
    monkeypatch.setitem(sys.modules, "triton", half_imported)
    assert not import_state.triton_imported(timeout_s=0.05)
    half_imported.__spec__._initializing = False
    assert import_state.triton_imported(timeout_s=0.05)
