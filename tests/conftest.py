import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# Every test runs kernels through Triton's interpreter unless a GPU test says otherwise.
if not os.environ.get("TUNED_KERNELS_GPU_TESTS"):
    os.environ.setdefault("TRITON_INTERPRET", "1")

# Inductor's C++ compiles, in this process and the programs the tests start, go through a cache kept for
# this run of the suite (tests/compiler/g++): the same generated source compiled in test after test with
# empty caches of its own is written from the first compile. The workers pytest-xdist starts share it.
# Inductor calls the compiler about 1,200 times a run (`--version` and `-v` among them): the cache runs on
# this Python, isolated and without its site (-I -S), 0.03 s a call, where the `python3` its first line
# finds may be a version manager's shell script (pyenv's shim: 0.1 s).
if "TESTS_CXX_CACHE" not in os.environ and shutil.which(os.environ.get("CXX", "g++")):
    os.environ["TESTS_REAL_CXX"] = os.environ.get("CXX", "g++")
    os.environ["TESTS_CXX_CACHE"] = _CXX_CACHE = tempfile.mkdtemp(prefix="tests-cxx-cache-")
    _launcher = Path(_CXX_CACHE, "bin", "g++")
    _launcher.parent.mkdir()
    _cache = Path(__file__).parent / "compiler" / "g++"
    _launcher.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -I -S {shlex.quote(str(_cache))} "$@"\n'
    )
    _launcher.chmod(0o755)
    os.environ["CXX"] = str(_launcher)


# Inductor's C++ back end takes the CPU's vector instructions as given, instead of compiling and loading a
# probe for each (about 1.7 s in a process that compiles a graph, 0.5 s in one that finds it cached). Helpers
# that give a program a clean environment keep it (factories.SUITE_SETTINGS): it is part of Inductor's keys.
if not os.environ.get("TUNED_KERNELS_GPU_TESTS"):
    os.environ.setdefault("TORCHINDUCTOR_VEC_ISA_OK", "1")


def pytest_unconfigure(config):  # type: ignore[no-untyped-def]
    if "_CXX_CACHE" in globals() and not hasattr(config, "workerinput"):  # the run that made it
        shutil.rmtree(_CXX_CACHE, ignore_errors=True)


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    if os.environ.get("TUNED_KERNELS_GPU_TESTS"):
        return
    skip = pytest.mark.skip(reason="needs a GPU: run ci/gpu_run.sh on a GPU machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


_ENVIRONMENT = pytest.StashKey[dict[str, str]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):  # type: ignore[no-untyped-def]
    item.stash[_ENVIRONMENT] = dict(os.environ)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):  # type: ignore[no-untyped-def]
    """Each test leaves this process's environment as it found it (after its fixtures' own teardown). Dask's
    Nanny, started in the test process, writes its pre-spawn environment into it (OMP_NUM_THREADS,
    PYTHONHASHSEED, ...), which Python and torch read as they start: every program the worker started after
    it was a new interpreter instead of a forked one (tests/forked_python.py)."""
    try:
        return (yield)
    finally:
        before = item.stash.get(_ENVIRONMENT, None)
        if before is not None and dict(os.environ) != before:
            os.environ.clear()
            os.environ.update(before)
