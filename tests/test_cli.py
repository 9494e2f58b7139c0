"""The command line explains itself: every command has a description, examples and help on each option,
takes --json, and `doctor` says in one screen whether serving can work here. Real processes for what a
user runs; the parser itself for what every command must have."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import factories, forked_python
from tuned_kernels.cli import build_parser
from tuned_kernels.results import write_results
from tuned_kernels.version import TOOL_VERSION


def _commands() -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "TUNED_KERNELS_PATH": "", **env}
    return forked_python.run([sys.executable, "-m", "tuned_kernels", *args], capture_output=True, text=True,
                          env=full, timeout=300)  # fmt: skip


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_command_has_a_description_an_example_help_on_every_option_and_json(name: str) -> None:
    parser = _commands()[name]
    assert parser.description and "\n\n" in parser.description  # a summary, then what it does
    assert (
        parser.epilog and parser.epilog.startswith("examples:") and f"tuned-kernels {name}" in parser.epilog
    )
    unexplained = [a.dest for a in parser._actions if not a.help and not isinstance(a, argparse._HelpAction)]
    assert unexplained == []
    assert "--json" in parser._option_string_actions


def test_version_and_a_bad_command_line_in_one_line() -> None:
    assert _cli("--version").stdout.strip() == f"tuned-kernels {TOOL_VERSION}"
    bad = _cli("tune", "--jobs", "0", "-o", "x.pb")
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "tuned-kernels tune: argument --jobs: must be 1 or more, got 0 (see tuned-kernels tune --help)"
    )


def test_doctor_says_what_is_set_up_here_and_passes_on_a_machine_that_can_serve(tmp_path: Path) -> None:
    out = _cli("doctor", "--json", TUNED_KERNELS_CACHE_DIR=str(tmp_path / "cache"))
    assert out.returncode == 0, out.stdout + out.stderr
    checks = {c["name"]: c for c in json.loads(out.stdout)}
    assert {"versions", "autoload", "target", "compiler", "overlay", "C compiler", "environment"} <= set(
        checks
    )
    assert f"tuned-kernels {TOOL_VERSION}" in checks["versions"]["detail"]
    assert checks["target"]["detail"].startswith("cpu")
    assert checks["bundles"]["status"] == "warn"  # none selected: misses are tuned here, serving still works
    assert checks["overlay"]["status"] == "ok" and str(tmp_path / "cache") in checks["overlay"]["detail"]
    text = _cli("doctor", TUNED_KERNELS_CACHE_DIR=str(tmp_path / "cache")).stdout.splitlines()
    assert [line.split()[0] for line in text] == [c["status"] for c in json.loads(out.stdout)]


def test_doctor_fails_where_serving_cannot_work_and_says_why(tmp_path: Path) -> None:
    out = _cli("doctor", TUNED_KERNELS_TARGET="sm999", TUNED_KERNELS_CACHE_DIR=str(tmp_path))
    assert out.returncode == 1
    (failed,) = [line for line in out.stdout.splitlines() if line.startswith("fail")]
    assert "TUNED_KERNELS_TARGET=sm999: takes one of sm70" in failed
    unwritable = _cli("doctor", TUNED_KERNELS_CACHE_DIR="/proc/no-such-folder")
    (overlay,) = [line for line in unwritable.stdout.splitlines() if " overlay " in line]
    assert overlay.startswith("warn") and "misses are tuned in every process" in overlay


def test_status_says_a_rejected_bundles_reason_once_and_no_counters(tmp_path: Path) -> None:
    other = tmp_path / "other-triton.pb"
    write_results(other, factories.results(factories.entry(), compiler=factories.TRITON_38))
    env = {"TUNED_KERNELS_PATH": str(other), "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "cache")}
    out = _cli("status", **env)
    assert out.returncode == 0 and out.stderr == ""
    assert [line for line in out.stdout.splitlines() if "3.8.0" in line] == [
        f"rejected   {other}: built with triton 3.8.0, running 3.9.0"
    ]
    shown = json.loads(_cli("status", "--json", **env).stdout)
    assert "hits" not in shown and "misses" not in shown and shown["rejected"][0]["file"] == str(other)


def test_index_prints_the_commands_that_serve_it_and_install_from_it(tmp_path: Path) -> None:
    bundle = tmp_path / "app.textproto"
    write_results(bundle, factories.results(factories.entry("app.scale_kernel")))
    assert (
        _cli("build-wheel", str(bundle), "--name", "app-tuned", "-o", str(tmp_path / "dist")).returncode == 0
    )
    out = _cli("index", str(tmp_path / "dist"), "-o", f"{tmp_path}/site/simple/")
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and "//" not in lines[0] and lines[0].endswith("site/simple/"), lines
    served = lines[1].split("--directory ", 1)[1]
    assert (
        "http.server 8000 --bind 127.0.0.1" in lines[1]
        and (Path(served) / "app-tuned-cpu/index.html").is_file()
    )
    assert lines[2].endswith("pip install --extra-index-url http://127.0.0.1:8000/ app-tuned-cpu")


def test_inspect_reads_a_bundle_wheel_a_folder_and_an_installed_bundle_by_name(tmp_path: Path) -> None:
    bundle = tmp_path / "app.textproto"
    write_results(bundle, factories.results(factories.entry("app.scale_kernel")))
    assert (
        _cli("build-wheel", str(bundle), "--name", "app-tuned", "-o", str(tmp_path / "dist")).returncode == 0
    )
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    site = tmp_path / "site"  # installed as pip would lay it out (a wheel is a zip of its installed files)
    zipfile.ZipFile(wheel).extractall(site)
    for name, env in [
        (str(wheel), {}),
        (str(tmp_path / "dist"), {}),
        ("app_tuned-CPU", {"PYTHONPATH": str(site)}),
    ]:
        out = _cli("inspect", name, **env)
        assert out.returncode == 0 and "app.scale_kernel" in out.stdout, (name, out.stderr)
    missing = _cli("inspect", "no-such-bundle")
    assert (
        missing.returncode != 0
        and "no such results file, folder, wheel or installed bundle" in missing.stderr
    )


def test_build_wheel_says_when_a_wheel_is_over_pypis_default_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tuned_kernels.cli import packaging

    bundle = tmp_path / "app.textproto"
    write_results(bundle, factories.results(factories.entry("app.scale_kernel")))
    monkeypatch.setattr(
        packaging, "LARGE_WHEEL_BYTES", 100
    )  # (100 MB in earnest: a wheel of compiled graphs)
    args = build_parser().parse_args(["build-wheel", str(bundle), "-o", str(tmp_path / "dist")])
    assert args.func(args) == 0
    said = capsys.readouterr().err
    assert "is over 0 MB" in said and "compiled graphs' share" in said
