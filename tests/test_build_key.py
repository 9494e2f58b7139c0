"""Triton's build key is computed once per Triton install, not once per process: the next process takes it
from the record while every Triton file stats the same, and computes it again as soon as one is written,
added or removed; a record it cannot use is computed over, and one it cannot write leaves the key computed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tuned_kernels.triton_edge import build_key
from tuned_kernels.triton_edge.build_key import record_path, remembered

KEY = "3.9.0" + "-".join(["ab" * 32] * 3)


@pytest.fixture
def triton_root(tmp_path: Path) -> Path:
    root = tmp_path / "triton"
    (root / "runtime").mkdir(parents=True)
    (root / "runtime" / "cache.py").write_text("def triton_key(): ...\n")
    (root / "_C").mkdir()
    (root / "_C" / "libtriton.so").write_bytes(b"\0" * 64)
    backend = tmp_path / "third_party" / "nvidia"
    backend.mkdir(parents=True)
    (backend / "compiler.py").write_text("def compile(): ...\n")
    (root / "backends").mkdir()
    (root / "backends" / "nvidia").symlink_to(backend, target_is_directory=True)
    return root


class Computing:
    """Triton's key function, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        return KEY


def in_a_new_process(root: Path, folder: Path, compute: Computing) -> str:
    """The key as a fresh process would get it (each `remembered` function holds its key once found)."""
    return remembered(compute, root, lambda: folder)()


def test_the_next_process_takes_the_key_from_the_record_while_the_files_stat_the_same(
    triton_root: Path, tmp_path: Path
) -> None:
    compute = Computing()
    assert in_a_new_process(triton_root, tmp_path / "cache", compute) == KEY
    assert in_a_new_process(triton_root, tmp_path / "cache", compute) == KEY
    assert compute.calls == 1
    (triton_root / "runtime" / "__pycache__").mkdir()  # bytecode written by an import changes nothing
    (triton_root / "runtime" / "__pycache__" / "cache.cpython-311.pyc").write_bytes(b"pyc")
    assert in_a_new_process(triton_root, tmp_path / "cache", compute) == KEY
    assert compute.calls == 1


@pytest.mark.parametrize("change", ["written", "added", "removed", "written-through-a-linked-folder"])
def test_a_triton_file_written_added_or_removed_computes_the_key_again(
    triton_root: Path, tmp_path: Path, change: str
) -> None:
    compute = Computing()
    in_a_new_process(triton_root, tmp_path / "cache", compute)
    library = triton_root / "_C" / "libtriton.so"
    if change == "written":
        library.write_bytes(b"\1" * 64)  # the same size: the times and the change time move
    elif change == "added":
        (triton_root / "language.py").write_text("x = 1\n")
    elif change == "removed":
        library.unlink()
    else:  # an editable install links its backends in from elsewhere
        (triton_root / "backends" / "nvidia" / "compiler.py").write_text("def changed(): ...\n")
    in_a_new_process(triton_root, tmp_path / "cache", compute)
    in_a_new_process(triton_root, tmp_path / "cache", compute)
    assert compute.calls == 2  # once more, then recorded again


@pytest.mark.parametrize(
    "record",
    ["garbage", "another-key-type", "nested-past-the-parser", "fifo", "folder", "huge", "another-users"],
)
def test_a_record_that_is_not_one_is_computed_over(triton_root: Path, tmp_path: Path, record: str) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    path = record_path(folder, triton_root)
    if record == "garbage":
        path.write_bytes(b"\xff{not json")
    elif record == "another-key-type":
        path.write_text(json.dumps({"files": "x", "triton_key": ["not", "a", "key"]}))
    elif record == "nested-past-the-parser":
        path.write_text("[" * 100_000)
    elif record == "fifo":
        os.mkfifo(path)
    elif record == "folder":
        path.mkdir()
    elif record == "huge":
        path.write_bytes(b" " * (2 << 20))
    else:
        if os.getuid() != 0:
            pytest.skip("giving a file to another user takes root")
        in_a_new_process(triton_root, folder, Computing())  # a true record, then given to another user
        os.chown(path, 65534, 65534)
    compute = Computing()
    assert in_a_new_process(triton_root, folder, compute) == KEY
    assert compute.calls == 1


def test_a_triton_folder_past_the_files_bound_is_not_recorded_and_its_key_is_computed(
    triton_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build_key, "MAX_FILES", 2)  # the planted folder holds 3
    compute = Computing()
    assert in_a_new_process(triton_root, tmp_path / "cache", compute) == KEY
    assert in_a_new_process(triton_root, tmp_path / "cache", compute) == KEY
    assert compute.calls == 2 and not (tmp_path / "cache").exists()


def test_a_cache_folder_that_cannot_be_written_leaves_the_key_computed(
    triton_root: Path, tmp_path: Path
) -> None:
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("")
    compute = Computing()
    assert in_a_new_process(triton_root, not_a_folder, compute) == KEY
    assert in_a_new_process(triton_root, not_a_folder, compute) == KEY
    assert compute.calls == 2


def test_a_served_process_takes_tritons_key_from_the_record_and_it_is_tritons_own(tmp_path: Path) -> None:
    """With serving on, Triton's module and its autotuner hold the remembered key function from the first
    import of Triton on; the key a later process takes from the record is the one Triton computes, and it is
    the record's (a record edited by hand is what the next process takes: the folder is the user's own)."""
    from triton.runtime.cache import triton_key

    tritons_own = triton_key()  # this process: Triton's own function (the suite does not serve)
    env = {**os.environ, "TUNED_KERNELS": "1", "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "cache")}
    program = (
        "import json, triton.runtime.autotuner as autotuner\n"
        "from triton.runtime import cache\n"
        "print(json.dumps([getattr(cache.triton_key, 'tuned_kernels_remembered', False),\n"
        "                  autotuner.triton_key is cache.triton_key, cache.triton_key()]))\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
        assert json.loads(run.stdout.splitlines()[-1]) == [True, True, tritons_own]
    (record,) = (tmp_path / "cache").glob("triton-key-*.json")
    record.write_text(json.dumps({**json.loads(record.read_text()), "triton_key": "edited"}))
    again = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300
    )
    assert json.loads(again.stdout.splitlines()[-1])[2] == "edited"


def test_a_program_calling_enable_itself_takes_tritons_key_from_the_record_as_one_served_by_the_switch(
    tmp_path: Path,
) -> None:
    """`tuned_kernels.enable()` in a program that imported Triton first (no TUNED_KERNELS): Triton's module
    holds the remembered key function from then on, the first process records the key and the next takes
    Triton's own key from the record."""
    from triton.runtime.cache import triton_key

    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNED_KERNELS")}
    env["TUNED_KERNELS_CACHE_DIR"] = str(tmp_path / "cache")
    program = (
        "import json\n"
        "from triton.runtime import cache\n"
        "import tuned_kernels; tuned_kernels.enable()\n"
        "print(json.dumps([getattr(cache.triton_key, 'tuned_kernels_remembered', False), cache.triton_key()]))\n"
    )
    for _ in range(2):
        run = subprocess.run(
            [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300
        )
        assert run.returncode == 0, run.stderr[-2000:]
        assert json.loads(run.stdout.splitlines()[-1]) == [True, triton_key()]
    (record,) = (tmp_path / "cache").glob("triton-key-*.json")
    assert json.loads(record.read_text())["triton_key"] == triton_key()
