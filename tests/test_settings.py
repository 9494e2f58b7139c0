"""Every `TUNED_KERNELS*` setting is checked: a value a variable does not take, a variable no one reads and
a path that names nothing are each one line naming the variable and what it takes; the program goes on with
the default, and `doctor` marks each as a fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tuned_kernels.registry.environment_check import environment_problems

from tests import factories
from tuned_kernels.triton_edge.measuring import miss_jobs

KINDS = {"bundles": "dir", "mine.pb.zst": "file", "a-file": "file", "empty": "empty"}


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({"TUNED_KERNELS": "1", "TUNED_KERNELS_VERBOSE": "1", "TUNED_KERNELS_ON_MISS": "nearest"}, []),
        ({"TUNED_KERNELS_PATH": f"mine.pb.zst{os.pathsep}bundles", "TUNED_KERNELS_TARGET": "sm90"}, []),
        ({"TUNED_KERNELS_MISS_JOBS": "8", "TUNED_KERNELS_COMPILED": "0", "TUNED_KERNELS_STALE": "seed"}, []),
        (
            {"TUNED_KERNELS_PATH": "mine.pb.zs"},
            ["TUNED_KERNELS_PATH names mine.pb.zs: no such file or folder"],
        ),
        (
            {"TUNED_KERNELS_PATH": "mine.pb.zst,bundles"},
            [
                "TUNED_KERNELS_PATH names mine.pb.zst,bundles: no such file or folder (several paths are joined by"
            ],
        ),
        (
            {"TUNED_KERNELS_PATH": "empty"},
            ["TUNED_KERNELS_PATH names empty: a folder with no results files in it; nothing is served"],
        ),
        (
            {"TUNED_KERNELS_ON_MISS": "nearst"},
            ["TUNED_KERNELS_ON_MISS=nearst: takes predict, tune or nearest; ignored"],
        ),
        (
            {"TUNED_KERNELS_MISS_JOBS": "-1"},
            ["TUNED_KERNELS_MISS_JOBS=-1: takes a whole number from 1 to 256"],
        ),
        ({"TUNED_KERNELS_MISS_JOBS": "abc"}, ["TUNED_KERNELS_MISS_JOBS=abc: takes a whole number"]),
        ({"TUNED_KERNELS_MISS_JOBS": "100000"}, ["TUNED_KERNELS_MISS_JOBS=100000: takes a whole number"]),
        ({"TUNED_KERNELS_ON_MISS": "Nearest", "TUNED_KERNELS_STALE": " SEED "}, []),  # honoured (below)
        ({"TUNED_KERNELS_MISS_JOBS": "+8"}, ["TUNED_KERNELS_MISS_JOBS=+8: takes a whole number"]),
        ({"TUNED_KERNELS_MISS_JOBS": "1_0"}, ["TUNED_KERNELS_MISS_JOBS=1_0: takes a whole number"]),
        ({"TUNED_KERNELS_MISS_JOBS": "²"}, ["TUNED_KERNELS_MISS_JOBS=²: takes a whole number"]),
        ({"TUNED_KERNELS_MISS_JOBS": "9" * 5000}, ["TUNED_KERNELS_MISS_JOBS=999"]),
        (
            {"TUNED_KERNELS_COMPILED": "maybe"},
            ["TUNED_KERNELS_COMPILED=maybe: takes 1, true, yes or on; 0, false, no or off; ignored"],
        ),
        ({"TUNED_KERNELS": "False", "TUNED_KERNELS_WARMUP": " off ", "TUNED_KERNELS_STRICT": "yes"}, []),
        ({"TUNED_KERNELS_VERBOSE": "2"}, []),  # a higher level: on
        (
            {"TUNED_KERNELS_VERBOSE": "loud"},
            ["TUNED_KERNELS_VERBOSE=loud: takes 1, true, yes, on or a higher"],
        ),
        ({"TUNED_KERNELS_TARGET": "sm999"}, ["TUNED_KERNELS_TARGET=sm999: takes one of sm70, sm75"]),
        ({"TUNED_KERNELS_CACHE_DIR": "a-file"}, ["TUNED_KERNELS_CACHE_DIR=a-file: not a folder"]),
        ({"TUNED_KERNELS_CACHE_DIR": "tk"}, ["TUNED_KERNELS_CACHE_DIR=tk is relative: it names /"]),
        ({"TUNED_KERNELS_CAPTURE": "c.pb"}, ["TUNED_KERNELS_CAPTURE=c.pb is relative: it names /"]),
        ({"TUNED_KERNELS_CACHE_DIR": "~/tk", "TUNED_KERNELS_REPORT": "/tmp/r.jsonl"}, []),
        (
            {"TUNED_KERNELS_VERBSE": "1"},
            ["TUNED_KERNELS_VERBSE is not a tuned-kernels setting (did you mean"],
        ),
    ],
)
def test_each_setting_that_cannot_be_honoured_is_named_with_what_it_takes(
    environ: dict[str, str], said: list[str]
) -> None:
    problems = environment_problems(environ, lambda path: KINDS.get(path, "missing"), lambda: True)
    assert len(problems) == len(said) and all(p.startswith(s) for p, s in zip(problems, said, strict=True)), (
        problems
    )


@pytest.mark.parametrize(
    ("value", "jobs"),
    [("4", 4), (" 8 ", 8), ("-1", 16), ("abc", 16), ("100000", 16), ("", 16), ("+8", 16), ("1_0", 16),
     ("²", 16), ("9" * 5000, 16)],
)  # fmt: skip
def test_a_miss_jobs_value_is_used_exactly_when_the_check_accepts_it(value: str, jobs: int) -> None:
    assert miss_jobs({"TUNED_KERNELS_MISS_JOBS": value}, cpus=64) == jobs
    named = environment_problems({"TUNED_KERNELS_MISS_JOBS": value})
    assert bool(named) == (jobs == 16 and value != ""), named


@pytest.mark.parametrize(
    ("environ", "on_miss", "stale"),
    [({"TUNED_KERNELS_ON_MISS": "Nearest"}, "nearest", "reject"),
     ({"TUNED_KERNELS_ON_MISS": " nearest"}, "nearest", "reject"),
     ({"TUNED_KERNELS_STALE": "SEED"}, "predict", "seed"),
     ({"TUNED_KERNELS_ON_MISS": "nearst"}, "predict", "reject")],
)  # fmt: skip
def test_a_choice_the_check_accepts_is_the_one_serving_uses(
    environ: dict[str, str], on_miss: str, stale: str
) -> None:
    from tuned_kernels.registry.settings import Settings

    policy = Settings.from_environ(environ).policy
    assert (policy.on_miss, policy.stale) == (on_miss, stale)
    assert bool(environment_problems(environ)) == ("nearst" in str(environ))


def test_a_mistyped_bundle_path_is_said_once_and_the_program_runs(tmp_path: Path) -> None:
    program = "import tuned_kernels; tuned_kernels.enable(); print('ran')"
    env = {**os.environ, "TUNED_KERNELS_PATH": str(tmp_path / "mine.pb.zs"), "TUNED_KERNELS_ON_MISS": "nearst",
           "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "cache")}  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and out.stdout.strip() == "ran", out.stderr[-2000:]
    warned = factories.warnings_in(out.stderr)
    assert len(warned) == 2 and "mine.pb.zs: no such file or folder" in warned[1 - ("nearst" in warned[1])]


def test_doctor_marks_each_setting_it_cannot_honour_as_a_fail(tmp_path: Path) -> None:
    env = {**os.environ, "TUNED_KERNELS_PATH": str(tmp_path / "mine.pb.zs"), "TUNED_KERNELS_COMPILED": "maybe",
           "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "cache")}  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-m", "tuned_kernels", "doctor"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    failed = [line for line in out.stdout.splitlines() if line.startswith("fail")]
    assert out.returncode == 1 and len(failed) == 2, out.stdout
    assert "mine.pb.zs: no such file or folder" in failed[1] and "COMPILED=maybe" in failed[0]


def test_an_unknown_target_on_a_machine_without_a_gpu_is_ignored_and_the_program_runs(tmp_path: Path) -> None:
    """TUNED_KERNELS_TARGET=sm999 with no GPU: one line, and the Quick start's kernels run through the
    interpreter as with no target set (Triton crashed for want of a driver before)."""
    app = tmp_path / "app.py"
    app.write_text(
        "import torch, triton, triton.language as tl\n"
        "@triton.autotune(configs=[triton.Config({'BLOCK': 64}), triton.Config({'BLOCK': 128})], key=['n'])\n"
        "@triton.jit\n"
        "def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n"
        "x, y = torch.ones(100), torch.empty(100)\n"
        "double[lambda m: (triton.cdiv(100, m['BLOCK']),)](x, y, 100)\n"
        "assert torch.equal(y, 2 * x); print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITON_", "TUNED_KERNELS"))}
    env |= {
        "TUNED_KERNELS": "1",
        "TUNED_KERNELS_TARGET": "sm999",
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "c"),
    }
    out = subprocess.run([sys.executable, str(app)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
    (warned,) = factories.warnings_in(out.stderr)
    assert warned.startswith("tuned-kernels: TUNED_KERNELS_TARGET=sm999: takes one of sm70")


@pytest.mark.parametrize(
    ("value", "on"),
    [("1", True), ("true", True), ("Yes", True), (" ON ", True), ("0", False), ("false", False),
     ("NO", False), ("off", False), ("", False), ("maybe", False), ("2", False)],
)  # fmt: skip
def test_a_switch_is_on_as_1_true_yes_or_on_and_off_as_0_false_no_or_off(value: str, on: bool) -> None:
    from tuned_kernels.setting_values import switch

    assert switch(value, False) is on
    assert switch(value, True) is (on or value.strip().lower() not in ("0", "false", "no", "off"))


@pytest.mark.parametrize(
    ("value", "serving", "said"),
    [("false", False, ""), ("off", False, ""), ("", False, ""), ("yes", True, ""), ("True", True, ""),
     ("maybe", False, "tuned-kernels: TUNED_KERNELS=maybe: takes 1, true, yes or on; 0, false, no or off; "
      "serving is off\n")],
)  # fmt: skip
def test_tuned_kernels_off_values_leave_serving_off_and_any_other_value_says_so(
    tmp_path: Path, value: str, serving: bool, said: str
) -> None:
    """What the installed .pth does at interpreter start: serving (the autoload's import hooks, waiting for
    Triton and Inductor) on for an on value, off for an off value, and off with one line for anything
    else."""
    hooked = "import sys; print(any(type(f).__name__ == '_AfterImport' for f in sys.meta_path))"
    done = subprocess.run(
        [sys.executable, "-c", hooked], capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "TUNED_KERNELS": value},
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{serving}\n", said)


def test_a_gpu_target_on_a_machine_without_a_gpu_is_said_before_any_kernel_runs() -> None:
    environ = {"TUNED_KERNELS_TARGET": "sm90"}
    assert environment_problems(environ, gpu_present=lambda: True) == []
    assert environment_problems(environ, gpu_present=lambda: False) == [
        "TUNED_KERNELS_TARGET=sm90: this machine has no GPU to run its kernels, which will fail to launch "
        "(unset it to run them on Triton's interpreter)"
    ]
    assert environment_problems({"TUNED_KERNELS_TARGET": "cpu"}, gpu_present=lambda: False) == []


def test_a_gpu_target_on_a_machine_without_a_gpu_names_no_other_cause_when_its_kernel_fails(
    tmp_path: Path,
) -> None:
    """The program's kernel fails to launch, as said at start; the summary adds no fall-back of ours (it
    said "a missed key's config compiled again" once per config: the parallel compiles had no driver)."""
    app = tmp_path / "app.py"
    app.write_text(
        "import torch\nfrom doubling import double\nx = torch.randn(1000)\ndouble(x, torch.empty_like(x))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUNED_KERNELS", "TRITON_INTERPRET"))}
    env |= {"TUNED_KERNELS": "1", "TUNED_KERNELS_TARGET": "sm90", "TUNED_KERNELS_VERBOSE": "1",
            "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay"),
            "PYTHONPATH": str(Path(__file__).parent / "corpora")}  # fmt: skip
    done = subprocess.run([sys.executable, str(app)], capture_output=True, text=True, timeout=120, env=env)
    said = [line for line in done.stderr.splitlines() if line.startswith("tuned-kernels:")]
    assert done.returncode == 1 and "no GPU to run its kernels" in said[0], done.stderr[-2000:]
    assert [line for line in said if "fell back" in line] == [], said


def test_a_cache_folder_given_with_a_leading_tilde_is_under_home_not_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`TUNED_KERNELS_CACHE_DIR="~/tk"` (quoted, or set where no shell expands it) names ~/tk, as the shell
    would have; it used to make a folder named `~` in the working folder."""
    from tuned_kernels.results.overlay import cache_dir

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TUNED_KERNELS_CACHE_DIR", "~/tk")
    monkeypatch.chdir(tmp_path)
    assert cache_dir() == tmp_path / "home" / "tk"
    assert environment_problems({"TUNED_KERNELS_CACHE_DIR": "~/tk"}) == []  # a folder it can make
