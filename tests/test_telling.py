"""What a user is told, in real processes where they meet it: where tuned misses went (and that a miss at a
program's very end does reach the overlay), which bundle was given and not used and why, where hits came
from, why a stored config was not served; what `capture` does to a file already there, to a folder not
there yet, and when stopped with Ctrl-C; the commands' words (a misspelled command, `inspect`'s target,
`index` without the tool's own wheel); and that a graph file keyed outside Inductor's cache is refused."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import factories, forked_python
from tuned_kernels import model
from tuned_kernels.results import read_results, write_results

ROOT = Path(__file__).resolve().parents[1]
APP = (ROOT / "tests/corpora/previous_release/app.py").read_text()  # `python app.py N ...`: one key per N
CHECK = 'assert torch.allclose(y, x * FACTOR.value), "wrong result"'
SLOW = APP.replace(CHECK, CHECK + '; __import__("time").sleep(0.1)')  # a capture to stop midway


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    mine = {k: v for k, v in os.environ.items() if not k.startswith("TUNED_KERNELS")}
    full = {**mine, "TRITON_INTERPRET": "1", "TUNED_KERNELS_CACHE_DIR": str(cwd / "overlay"), **env}
    return forked_python.run(args, cwd=cwd, env=full, capture_output=True, text=True, timeout=240)


def _tool(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "tuned_kernels", *args], cwd, **env)


def _said(out: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in out.stderr.splitlines() if line.startswith("tuned-kernels")]


@pytest.fixture(scope="module")
def first_capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """app.py's two keys (n=100, n=300) captured into deep/er/app.pb, a folder not there before (capture
    makes it), and the capture's run."""
    work = tmp_path_factory.mktemp("captured")
    (work / "app.py").write_text(APP)
    out = _tool(work, "capture", "-o", "deep/er/app.pb", "--", sys.executable, "app.py", "100", "300")
    assert out.returncode == 0, out.stderr[-3000:]
    return work / "deep" / "er" / "app.pb", out


@pytest.fixture(scope="module")
def captured(first_capture: tuple[Path, subprocess.CompletedProcess[str]]) -> Path:
    return first_capture[0]


def _serve(cwd: Path, paths: str, **env: str) -> subprocess.CompletedProcess[str]:
    (cwd / "app.py").write_text(APP)
    verbose = {"TUNED_KERNELS": "1", "TUNED_KERNELS_PATH": paths, "TUNED_KERNELS_VERBOSE": "1"}
    out = _run([sys.executable, "app.py", "100", "300"], cwd, **{**verbose, **env})
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def test_misses_an_unwritable_overlay_cannot_keep_are_said_to_stay_in_the_process_once(
    tmp_path: Path,
) -> None:
    (tmp_path / "a-file").write_text("")
    out = _serve(tmp_path, "", TUNED_KERNELS_CACHE_DIR=str(tmp_path / "a-file"))
    said = _said(out)
    assert said[0].endswith("TUNED_KERNELS_CACHE_DIR=" + str(tmp_path / "a-file") + ": not a folder; the "
                            "overlay of tuned misses is not kept")  # fmt: skip
    assert said[2].endswith("tuned here and kept in this process only (the overlay could not be written)")
    assert not [line for line in said if "cannot write" in line or "fell back" in line], said


def test_a_bundle_given_and_not_used_is_said_with_why_beside_the_one_used(
    tmp_path: Path, captured: Path
) -> None:
    foreign = read_results(captured)
    sm90 = dataclasses.replace(foreign.header, target=factories.H100)
    write_results(tmp_path / "h100.pb", dataclasses.replace(foreign, header=sm90))
    out = _serve(tmp_path, f"h100.pb{os.pathsep}{captured}")
    said = _said(out)
    assert said[0] == "tuned-kernels: not used here: h100.pb: built for sm90, running cpu"
    assert said[1] == "tuned-kernels: 2 hits, 0 misses; 0 configs benchmarked in 0.0 s"
    assert said[2].startswith(
        f"tuned-kernels: bundles: {captured} (not used: h100.pb: built for sm90, running"
    )


@pytest.mark.parametrize("serving", ["0", "1"])
def test_status_says_a_bundle_path_that_names_nothing_once(tmp_path: Path, serving: str) -> None:
    # as a user runs it: no TRITON_INTERPRET (with serving on, enabling then reads the settings too)
    out = _tool(
        tmp_path, "status", TUNED_KERNELS_PATH="nope.pb.zst", TUNED_KERNELS=serving, TRITON_INTERPRET="0"
    )
    assert "bundles    none found (TUNED_KERNELS_PATH=nope.pb.zst: none there)" in out.stdout
    assert out.stdout.count("problem    TUNED_KERNELS_PATH names nope.pb.zst: no such file or folder") == 1


def test_hits_from_the_users_overlay_are_said_to_come_from_it(tmp_path: Path) -> None:
    first, second = _serve(tmp_path, ""), _serve(tmp_path, "")
    assert "tuned-kernels: 0 hits, 2 misses (2 not in any bundle)" in first.stderr
    assert "tuned-kernels: 2 hits (2 from this user's overlay), 0 misses" in second.stderr


def test_a_stored_config_the_kernel_no_longer_has_is_tuned_once_then_served_from_the_overlay(
    tmp_path: Path, captured: Path
) -> None:
    """The kernel's configs changed since the capture (BLOCK 32 and 64 became 16 and 128): the miss says
    so, and the config tuned then is served from the overlay from the next run on."""
    results = read_results(captured)
    gone = model.Config.of({"BLOCK": 48})
    edited = tuple(
        dataclasses.replace(e, best=gone, timings=(model.Timing(gone, 1.0),)) for e in results.entries
    )
    write_results(tmp_path / "old.pb", dataclasses.replace(results, entries=edited))
    first, second = _serve(tmp_path, "old.pb"), _serve(tmp_path, "old.pb")
    assert "tuned-kernels: 0 hits, 2 misses (2 configs changed)" in first.stderr, first.stderr[-2000:]
    assert first.stderr.count("is not one of the configs of app.scale_kernel; tuning instead") == 1
    assert "tuned-kernels: 2 hits (2 from this user's overlay), 0 misses" in second.stderr, second.stderr


def test_capture_onto_a_bundle_says_it_replaced_it_and_merges_when_asked(
    tmp_path: Path, first_capture: tuple[Path, subprocess.CompletedProcess[str]]
) -> None:
    bundle, first = first_capture  # into a folder not there before, which capture made
    assert "replacing" not in first.stderr, first.stderr[-2000:]
    (tmp_path / "app.py").write_text(APP)
    out = tmp_path / "app.pb"
    shutil.copyfile(bundle, out)
    again = _tool(tmp_path, "capture", "-o", str(out), "--", sys.executable, "app.py", "500")
    assert again.stderr.splitlines()[-1] == "(replacing the 2 entries it held; --merge keeps them)"
    assert [e.key[0] for e in read_results(out).entries] == [500]
    merged = _tool(tmp_path, "capture", "--merge", "-o", str(out), "--", sys.executable, "app.py", "100")
    assert merged.stderr.splitlines()[-1] == "(merged with the 1 entries it held)"
    assert sorted(e.key[0] for e in read_results(out).entries) == [100, 500]


def _as_a_terminal_starts_it() -> None:
    """Ctrl-C's default action, as a shell gives a program it starts: a process ignoring SIGINT (a library
    in this test process may have set that) would hand its children the ignoring on, and they run on."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_capture_stopped_with_ctrl_c_keeps_what_was_tuned_before(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(SLOW)
    sizes = [str(n) for n in range(100, 3100, 100)]  # 30 keys, a tenth of a second apart at least
    env = {**os.environ, "TRITON_INTERPRET": "1", "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay")}
    argv = [sys.executable, "-m", "tuned_kernels", "capture", "-o", "app.pb", "--", sys.executable, "app.py"]
    # a terminal's Ctrl-C: SIGINT to the foreground process group, capture and the program alike
    proc = subprocess.Popen(
        [*argv, *sizes], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=_as_a_terminal_starts_it,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    work = list(tmp_path.glob(".capturing-*app.pb"))
    while time.monotonic() < deadline and (not work or len(read_results(work[0]).entries) < 2):
        time.sleep(0.2)  # until the program has recorded two keys (polling; no sleep decides the outcome)
        work = list(tmp_path.glob(".capturing-*app.pb"))
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    kept = read_results(tmp_path / "app.pb").entries
    assert 2 <= len(kept) < 30 and err.splitlines()[-1].startswith(f"captured {len(kept)} tuning decisions")


def test_a_misspelled_command_gets_the_nearest_one(tmp_path: Path) -> None:
    out = _tool(tmp_path, "statsu")
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "tuned-kernels: argument COMMAND: invalid choice: 'statsu' (did you mean 'status'?) "
        "(see tuned-kernels --help)"
    )


def test_inspect_names_the_cpu_target_once(captured: Path) -> None:
    out = _tool(captured.parent, "inspect", str(captured))
    assert out.stdout.splitlines()[0] == "target    cpu (Triton interpreter) -> tuned-kernels-cpu"


def test_an_index_without_the_tools_own_wheel_says_what_an_install_from_it_needs(
    tmp_path: Path, captured: Path
) -> None:
    built = _tool(tmp_path, "build-wheel", str(captured), "--name", "app-tuned", "-o", "dist")
    assert built.returncode == 0, built.stderr[-2000:]
    out = _tool(tmp_path, "index", "dist", "-o", "site")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "note: no tuned-kernels wheel in the folder" in out.stdout


def _summary(**changes: object) -> dict[str, object]:
    """A process's summary (registry.summary's shape) with `changes`."""
    base: dict[str, object] = {
        "hits": 0, "nearest": 0, "misses": 0, "misses_by_reason": {}, "configs_benchmarked": 0,
        "seconds_tuning": 0.0, "changed_kernels": {}, "selected": [], "rejected": [], "served_from": {},
        "overlay": {"path": "o.pb", "kept": True}, "missed_keys": [], "fallbacks": {},
        "compiled_kernels": {"served": 0, "compiled_here": None, "compiled_here_names": []},
    }  # fmt: skip
    return {**base, **changes}


def test_the_summary_names_four_missed_keys_and_counts_the_rest() -> None:
    from tuned_kernels.registry.exit_summary import exit_summary

    keys = [["app.k", [str(n)]] for n in range(6)]
    (missed,) = [line for line in exit_summary(_summary(misses=6, missed_keys=keys)) if "missed:" in line]
    assert missed == (
        "tuned-kernels: missed: app.k (0); app.k (1); app.k (2); app.k (3) and 2 more; tuned here and kept in "
        "o.pb (every environment of this user)"
    )


def test_a_miss_at_a_programs_very_end_reaches_a_full_overlay(tmp_path: Path) -> None:
    """The overlay at its bound makes each write a long rewrite: a program that misses a key and ends at
    once (no stats(), no summary) still leaves it there, and the next run is served it."""
    from tuned_kernels.hardware import compiler_fingerprint, target_for_arch

    from tuned_kernels.results.overlay import MAX_ENTRIES, overlay_file_name

    target = target_for_arch("cpu")
    compiler = compiler_fingerprint(target)
    header = model.Header(target, compiler, model.Producer.CAPTURE, "0.1.0", "2026-11-27T00:00:00Z")
    filler = [factories.entry("other.kernel", key=(n, "torch.float32")) for n in range(MAX_ENTRIES)]
    full = model.Results(header, tuple(sorted(filler, key=model.entry_sort_key)))
    write_results(tmp_path / "overlay" / overlay_file_name(target.arch, compiler), full)
    (tmp_path / "app.py").write_text(APP)
    first = _run([sys.executable, "app.py", "100"], tmp_path, TUNED_KERNELS="1")
    assert first.returncode == 0 and first.stderr == "", first.stderr[-2000:]
    second = _run([sys.executable, "app.py", "100"], tmp_path, TUNED_KERNELS="1", TUNED_KERNELS_VERBOSE="1")
    assert "tuned-kernels: 1 hits (1 from this user's overlay), 0 misses" in second.stderr, second.stderr


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("../../escaped.py", None),
        ("../../escaped.py", "fxgraph"),
        ("fxgraph/ab/../../../escaped.py", "fxgraph"),
    ],
)
def test_a_graph_file_keyed_outside_inductors_cache_is_never_written(
    tmp_path: Path, key: str, kind: str | None
) -> None:
    """Whatever kind its config names (or none), a stored graph file whose key is not one of Inductor's
    path shapes is refused, and nothing is written outside the cache directory."""
    import hashlib

    from tuned_kernels.inductor_edge import graphs

    data = b"import os; os.system('echo escaped')\n"
    digest = hashlib.sha256(data).hexdigest()
    config = model.Config.of({graphs.KIND: kind} if kind else {"BLOCK": 1})
    files = (model.ArtifactFile("escaped.py", digest, len(data)),)
    entry = model.Entry(
        kernel=graphs.identity(), key=(key,), best=config, timings=(model.Timing(config, 0.0),),
        artifacts=(model.Artifact("0" * 64, "cpu", files, config),),
    )  # fmt: skip
    cache = tmp_path / "a" / "b"
    cache.mkdir(parents=True)
    placed = graphs.install([(entry, {digest: data}.get)], cache)
    assert (placed.written, len(placed.refused)) == (0, 1)
    assert placed.refused[0].endswith("is not a path Inductor's caches use")
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == []


def test_capture_merge_onto_another_targets_bundle_stops_before_the_program_runs(
    tmp_path: Path, captured: Path
) -> None:
    results = read_results(captured)
    write_results(tmp_path / "h100.pb", dataclasses.replace(results, header=dataclasses.replace(
        results.header, target=factories.H100)))  # fmt: skip
    held = (tmp_path / "h100.pb").read_bytes()
    (tmp_path / "app.py").write_text(APP.replace("import sys\n", "import sys\nprint('ran')\n", 1))
    out = _tool(tmp_path, "capture", "--merge", "-o", "h100.pb", "--", sys.executable, "app.py")
    assert out.returncode == 1 and "ran" not in out.stdout, out.stdout
    assert [line.split(": ", 1)[0] for line in out.stderr.splitlines()] == ["tuned-kernels capture"]
    assert (tmp_path / "h100.pb").read_bytes() == held  # left as it was


def test_tune_refuses_an_output_it_cannot_write_before_tuning_any_key(tmp_path: Path) -> None:
    planted = str(ROOT / "tests" / "corpora" / "planted.py")
    out = _tool(tmp_path, "tune", "--corpus", planted, "-o", "t.json")
    assert out.returncode == 1 and not out.stdout
    assert out.stderr.splitlines() == [
        "tuned-kernels tune: t.json: unknown extension; expected one of .textproto, .textproto.zst, .txt, "
        ".txt.zst, .pb, .pb.zst, .binpb, .binpb.zst"
    ]  # no key's progress line: nothing was tuned first


def test_index_refuses_a_wheel_that_is_not_one(tmp_path: Path) -> None:
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "x-1.0-py3-none-any.whl").write_text("not a zip")
    out = _tool(tmp_path, "index", "dist", "-o", "site")
    assert (out.returncode, out.stdout, (tmp_path / "site").exists()) == (1, "", False)
    assert out.stderr.strip().endswith("x-1.0-py3-none-any.whl: not a wheel (a zip file named "
                                       "NAME-VERSION-PY-ABI-PLATFORM.whl)")  # fmt: skip


FORKING = """
import multiprocessing
import app

if __name__ == "__main__":
    app.run(300)  # a miss in the parent: its overlay writer thread is running when it forks
    child = multiprocessing.get_context("fork").Process(target=app.run, args=(100,))  # a miss in the child
    child.start()
    child.join(120)
    assert child.exitcode == 0, child.exitcode
"""


def test_a_miss_in_a_multiprocessing_child_reaches_the_overlay(tmp_path: Path) -> None:
    """A forked child (a DataLoader worker, a server's process) inherits a dead writer thread: its miss is
    written by the child itself, so the next run hits both keys."""
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "forking.py").write_text(FORKING)
    first = _run([sys.executable, "forking.py"], tmp_path, TUNED_KERNELS="1")
    assert first.returncode == 0, first.stderr[-2000:]
    second = _run(
        [sys.executable, "app.py", "100", "300"], tmp_path, TUNED_KERNELS="1", TUNED_KERNELS_VERBOSE="1"
    )
    assert "tuned-kernels: 2 hits (2 from this user's overlay), 0 misses" in second.stderr, second.stderr
