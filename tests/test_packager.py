"""packager/: valid, reproducible bundle wheels; a PEP 503 index pip installs from; the whole loop in a
fresh venv, from a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest
from tuned_kernels.packager.wheel import build_wheels

from tests import factories
from tuned_kernels.results import write_results

ROOT = Path(__file__).resolve().parents[1]
PLANTED = str(Path(__file__).parent / "corpora" / "planted.py")
DOUBLING = str(Path(__file__).parent / "corpora" / "doubling.py")


def test_two_builds_from_the_same_inputs_are_byte_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "r.pb"
    write_results(results, factories.results(factories.entry()))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    (one,) = build_wheels([str(results)], tmp_path / "a", "1.0")
    (two,) = build_wheels([str(results)], tmp_path / "b", "1.0")
    assert one.name == "tuned_kernels_cpu-1.0-py3-none-any.whl"
    assert one.read_bytes() == two.read_bytes()
    with zipfile.ZipFile(one) as zf:
        assert {i.date_time for i in zf.infolist()} == {(2023, 11, 14, 22, 13, 20)}
        assert zf.read("tuned_kernels_cpu-1.0.dist-info/METADATA").startswith(b"Metadata-Version: 2.1\n")
        metadata = zf.read("tuned_kernels_cpu-1.0.dist-info/METADATA").decode()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert requires == ["Requires-Dist: tuned-kernels>=0.1.0"]  # never pulls or pins a triton


def test_one_wheel_per_target_with_a_bundle_per_compiler(tmp_path: Path) -> None:
    paths = []
    for i, (target, compiler) in enumerate([(factories.CPU, factories.TRITON_39), (factories.CPU, factories.TRITON_38),
                                            (factories.H100, factories.TRITON_39)]):  # fmt: skip
        paths.append(str(tmp_path / f"r{i}.pb"))
        write_results(paths[-1], factories.results(factories.entry(), target=target, compiler=compiler))
    wheels = build_wheels(paths, tmp_path / "dist", "2.0")
    assert sorted(w.name for w in wheels) == ["tuned_kernels_cpu-2.0-py3-none-any.whl",
                                              "tuned_kernels_sm90-2.0-py3-none-any.whl"]  # fmt: skip
    with zipfile.ZipFile(tmp_path / "dist" / "tuned_kernels_cpu-2.0-py3-none-any.whl") as zf:
        bundles = [n for n in zf.namelist() if "/bundles/" in n]
    assert [b.split("/")[-1].split("-")[1] for b in bundles] == ["3.8.0", "3.9.0"]


def test_wheels_pass_check_wheel_contents_and_twine(tmp_path: Path) -> None:
    results = tmp_path / "r.pb"
    write_results(results, factories.results(factories.entry()))
    (wheel,) = build_wheels([str(results)], tmp_path / "dist", "1.0")
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "check-wheel-contents"), str(wheel)], check=True, timeout=600)
    subprocess.run([str(bin_dir / "twine"), "check", "--strict", str(wheel)], check=True, timeout=600)


@pytest.mark.slow
def test_tune_wheel_index_serve_install_run_in_a_fresh_venv(tmp_path: Path) -> None:
    """The README's loop as a new user meets it: nothing shared with this environment but pip's cache and
    PyTorch's installed files (factories.environment_with_torch)."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay")}
    env.pop("TUNED_KERNELS_PATH", None)
    tk = [sys.executable, "-m", "tuned_kernels"]
    subprocess.run(
        [*tk, "tune", "--corpus", PLANTED, "-o", str(tmp_path / "r.pb.zst")], check=True, env=env, timeout=600
    )
    subprocess.run(
        [*tk, "build-wheel", str(tmp_path / "r.pb.zst"), "-o", str(tmp_path / "dist")],
        check=True,
        timeout=600,
    )
    # a publisher's own bundle (another kernel), under its own name, beside ours on the same index
    subprocess.run(
        [*tk, "tune", "--corpus", DOUBLING, "-o", str(tmp_path / "acme.pb.zst")],
        check=True,
        env=env,
        timeout=600,
    )
    subprocess.run([*tk, "build-wheel", str(tmp_path / "acme.pb.zst"), "-o", str(tmp_path / "dist"),
                    "--name", "acme-tuned"], check=True, timeout=600)  # fmt: skip
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == [
        "acme_tuned_cpu-0.1.0-py3-none-any.whl", "tuned_kernels_cpu-0.1.0-py3-none-any.whl"]  # fmt: skip
    subprocess.run(
        [*tk, "index", str(tmp_path / "dist"), "-o", str(tmp_path / "www" / "simple")],
        check=True,
        timeout=600,
    )
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path / "own"), str(ROOT)], check=True, timeout=600)  # fmt: skip

    python = factories.environment_with_torch(tmp_path / "venv") / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--no-compile"]  # (compiled on import)
    subprocess.run([*pip, *map(str, (tmp_path / "own").glob("*.whl"))], check=True, timeout=600)

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "www"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/simple/"
        subprocess.run(
            [*pip, "--index-url", url, "tuned-kernels-cpu", "acme-tuned-cpu"], check=True, timeout=600
        )
    finally:
        server.shutdown()

    program = (
        f"import sys, json, torch; sys.path.insert(0, {str(Path(PLANTED).parent)!r})\n"
        "from planted import double\n"
        "import doubling\n"
        "import tuned_kernels\n"
        "for n in map(int, sys.argv[1:]):\n"
        "    x = torch.randn(n); assert torch.equal(double(x, torch.empty_like(x)), 2 * x)\n"
        "x = torch.randn(300); assert torch.equal(doubling.double(x, torch.empty_like(x)), 2 * x)\n"
        "print(json.dumps(tuned_kernels.stats()))\n"
    )
    run_env = {**env, "TUNED_KERNELS": "1"}  # no code change: tuned_kernels.pth enables the registry

    def run(*sizes: int) -> dict:
        out = subprocess.run([str(python), "-c", program, *map(str, sizes)], check=True,
                             capture_output=True, text=True, env=run_env, cwd=tmp_path, timeout=600)  # fmt: skip
        return json.loads(out.stdout)

    tuned = run(100, 300)
    assert (tuned["hits"], tuned["misses"], tuned["configs_benchmarked"]) == (3, 0, 0)
    assert sorted(b["bundle"] for b in tuned["selected"]) == [
        "acme-tuned-cpu 0.1.0",
        "tuned-kernels-cpu 0.1.0",
    ]
    served = {Path(path).parent.parent.name: n for path, n in tuned["served_from"].items()}
    assert served == {"tuned_kernels_bundle_cpu": 2, "acme_tuned_bundle_cpu": 1}  # each its own kernel
    new = run(100, 5000)  # a key no bundle holds: served a config predicted from the bundle's, untimed
    assert (new["predicted"], new["misses"], new["configs_benchmarked"]) == (1, 0, 0)
    again = run(100, 5000)  # the prediction, kept in the overlay, serves again at once
    assert (again["hits"], again["predicted"], again["misses"], again["configs_benchmarked"]) == (2, 1, 0, 0)
