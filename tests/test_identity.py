"""A user's bundle keeps serving their kernels however the file is run and whatever is edited beside the
kernels; a change to what a kernel does is tuned again, and said once. Real processes on the interpreter,
on a kernel file each test writes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked_python
from tuned_kernels import model
from tuned_kernels.results import read_results

ROOT = Path(__file__).resolve().parents[1]

# a user's program: an autotuned kernel calling a helper that reads a global constexpr (the previous release
# captured it too: tests/corpora/previous_release/app.textproto)
APP = (ROOT / "tests/corpora/previous_release/app.py").read_text()

ABOVE = "\n\n@triton.jit\ndef scaled"
KEEPS_SERVING = {
    "an import added at the top": ("import sys\n", "import os\nimport sys\n"),
    "a function added above the kernel": (ABOVE, "\n\ndef unused():\n    return 1\n" + ABOVE),
    "comments and blank lines reformatted": (
        "    # one block of the input per program\n",
        "\n    # each program: one block\n\n",
    ),
}
TUNED_AGAIN = {
    "the kernel's body": ("scaled(tl.load(x_ptr + offs", "1.0 * scaled(tl.load(x_ptr + offs"),
    "a @triton.jit helper it calls": ("return x * FACTOR", "return x * FACTOR * 1.0"),
    "a global constexpr it reads": ("tl.constexpr(2.0)", "tl.constexpr(3.0)"),
}
CHANGED = "the kernel changed since it was tuned"


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "TRITON_INTERPRET": "1", "TUNED_KERNELS_CACHE_DIR": str(cwd / "overlay"), **env}
    return forked_python.run(args, cwd=cwd, env=full, capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`tuned-kernels capture -o app.pb -- python app.py 100`: the bundle of the program as written."""
    work = tmp_path_factory.mktemp("captured")
    (work / "app.py").write_text(APP)
    out = _run(
        [sys.executable, "-m", "tuned_kernels", "capture", "-o", "app.pb", "--", sys.executable, "app.py"],
        work,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return work / "app.pb"


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd)


def _serve(tmp_path: Path, bundle: Path, source: str, *sizes: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "app.py").write_text(source)
    env = {"TUNED_KERNELS": "1", "TUNED_KERNELS_PATH": str(bundle), "TUNED_KERNELS_VERBOSE": "1"}
    out = _run([sys.executable, "app.py", *sizes], tmp_path, **env)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def test_a_script_is_named_by_the_module_it_imports_as(captured: Path) -> None:
    assert [e.kernel.name for e in read_results(captured).entries] == ["app.scale_kernel"]
    assert read_results(captured).entries[0].kernel.scheme is model.IdentityScheme.SOURCE


def test_a_script_renamed_since_its_capture_is_served_with_one_note(tmp_path: Path, captured: Path) -> None:
    """app.py renamed app_v2.py, its kernel unchanged: the same function name and source digest under
    another module is the same kernel, served from the old name's entries, said once."""
    (tmp_path / "app_v2.py").write_text(APP)
    env = {"TUNED_KERNELS": "1", "TUNED_KERNELS_PATH": str(captured), "TUNED_KERNELS_VERBOSE": "1"}
    out = _run([sys.executable, "app_v2.py"], tmp_path, **env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "tuned-kernels: 1 hits, 0 misses" in out.stderr, out.stderr[-3000:]
    assert out.stderr.count("serving app_v2.scale_kernel from the entries of app.scale_kernel") == 1


def test_a_script_captured_as_python_app_is_served_to_tests_that_import_it(
    tmp_path: Path, captured: Path
) -> None:
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "test_app.py").write_text("import app\n\n\ndef test_scale():\n    y, x = app.run(100)\n")
    out = _pytest(tmp_path, "test_app.py", "--tuned-kernels-load", str(captured))
    assert out.returncode == 0, out.stdout[-3000:]
    assert "tuned-kernels: 1 hits, 0 misses" in out.stdout, out.stdout[-3000:]


@pytest.mark.parametrize("edit", KEEPS_SERVING)
def test_an_edit_beside_the_kernel_keeps_it_served(tmp_path: Path, captured: Path, edit: str) -> None:
    before, after = KEEPS_SERVING[edit]
    assert before in APP
    out = _serve(tmp_path, captured, APP.replace(before, after, 1))
    assert "tuned-kernels: 1 hits, 0 misses; 0 configs benchmarked" in out.stderr, out.stderr[-3000:]
    assert CHANGED not in out.stderr


@pytest.mark.parametrize("edit", TUNED_AGAIN)
def test_a_change_to_what_the_kernel_does_is_tuned_again_and_said_once(
    tmp_path: Path, captured: Path, edit: str
) -> None:
    before, after = TUNED_AGAIN[edit]
    assert before in APP
    out = _serve(tmp_path, captured, APP.replace(before, after, 1), "100", "300")  # two keys: two misses
    assert out.stderr.count(CHANGED) == 1, out.stderr[-3000:]
    assert f"app.pb: holds app.scale_kernel for another source: {CHANGED}" in out.stderr
    assert "tuned-kernels: 0 hits, 2 misses (2 kernel changed); 4 configs benchmarked" in out.stderr
    (missed,) = [line for line in out.stderr.splitlines() if line.startswith("tuned-kernels: missed: ")]
    assert "app.scale_kernel (100, " in missed and "app.scale_kernel (300, " in missed
    assert f"kept in {tmp_path / 'overlay'}" in missed and "(every environment of this user)" in missed


def test_a_bundle_made_by_the_previous_release_still_serves(tmp_path: Path) -> None:
    """tests/corpora/previous_release/: `python app.py` captured by the release before identity by source
    (kernels by Triton's cache key, or on the interpreter the sha256 of their text; named `__main__.*`)."""
    fixture = ROOT / "tests/corpora/previous_release"
    bundle = read_results(fixture / "app.textproto")
    assert {e.kernel.scheme for e in bundle.entries} == {model.IdentityScheme.TRITON_CACHE_KEY}
    out = _serve(tmp_path, fixture / "app.textproto", (fixture / "app.py").read_text())
    assert "tuned-kernels: 1 hits, 0 misses; 0 configs benchmarked" in out.stderr, out.stderr[-3000:]


def test_merge_carries_a_previous_release_bundle_over_to_identity_by_source(tmp_path: Path) -> None:
    fixture = ROOT / "tests/corpora/previous_release"
    (tmp_path / "app.py").write_text((fixture / "app.py").read_text())
    args = ["merge", str(fixture / "app.textproto"), "-o", "carried.pb", "--carry-over", "app"]
    out = _run([sys.executable, "-m", "tuned_kernels", *args], tmp_path)
    assert out.returncode == 0 and "1 carried over" in out.stdout, out.stdout + out.stderr[-2000:]
    (entry,) = read_results(tmp_path / "carried.pb").entries
    assert entry.kernel.name == "app.scale_kernel" and entry.kernel.scheme is model.IdentityScheme.SOURCE
    moved = (fixture / "app.py").read_text().replace("import sys\n", "import os\nimport sys\n")
    out = _serve(tmp_path, tmp_path / "carried.pb", moved)
    assert "tuned-kernels: 1 hits, 0 misses; 0 configs benchmarked" in out.stderr, out.stderr[-3000:]


def test_capture_and_the_pytest_plugin_both_write_an_empty_file_when_nothing_is_tuned(tmp_path: Path) -> None:
    out = _run([sys.executable, "-m", "tuned_kernels", "capture", "-o", "none.pb", "--", sys.executable, "-c", "0"],
               tmp_path)  # fmt: skip
    assert out.returncode == 0 and "captured 0 tuning decisions" in out.stderr, out.stderr[-2000:]
    assert read_results(tmp_path / "none.pb").entries == ()
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    out = _pytest(tmp_path, "test_nothing.py", "--tuned-kernels-dump", "dump.pb")
    assert out.returncode == 0, out.stdout[-2000:]
    assert read_results(tmp_path / "dump.pb").entries == ()


def test_capture_of_a_program_that_fails_leaves_the_output_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "kept.pb").write_bytes(b"what the user had")
    args = ["capture", "-o", "kept.pb", "--", sys.executable, "-c", "raise SystemExit(3)"]
    out = _run([sys.executable, "-m", "tuned_kernels", *args], tmp_path)
    assert out.returncode == 3 and "left as it was" in out.stderr, out.stderr[-2000:]
    assert (tmp_path / "kept.pb").read_bytes() == b"what the user had"


def test_the_committed_full_matmul_bundle_names_the_built_in_kernels_as_they_are() -> None:
    """benchmarks/' full-matmul bundle (BENCHMARKS.md's matmul numbers) is keyed by identity by source, so it
    serves the built-in kernels on any Triton's machine that computes the same digests: these do."""
    from tuned_kernels.kernels import matmul, skinny_matmul, tma_matmul
    from tuned_kernels.triton_edge.keys import kernel_identity

    bundle = read_results(ROOT / "benchmarks/matmul-full-h100-triton3.6.0.pb.zst")
    kernels = (tma_matmul.matmul_tma_kernel, skinny_matmul.matmul_skinny_kernel, matmul.MATMUL_CHOICE)
    current = {kernel_identity(k).name: kernel_identity(k) for k in kernels}
    assert {e.kernel for e in bundle.entries} == set(current.values())
    assert len(bundle.entries) == 48 + 36 + 84  # copy-engine kernel (M > 64), split-K (M <= 64), choices


def test_a_syntax_tree_reads_the_same_on_every_python() -> None:
    """The digest hashes this text: no positions, and no field a Python version adds empty (3.12's
    `type_params=[]`), so a bundle tuned under one Python serves under another."""
    import ast

    from tuned_kernels.source_identity import canonical_tree

    tree = ast.parse("def f(x):\n    # a comment\n    return x + 1\n").body[0]
    assert canonical_tree(tree) == (
        "FunctionDef(name='f',args=arguments(args=[arg(arg='x')]),"
        "body=[Return(value=BinOp(left=Name(id='x',ctx=Load()),op=Add(),right=Constant(value=1)))])"
    )
