"""Small builders of model values for tests."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING

from tuned_kernels import model

if TYPE_CHECKING:
    from tuned_kernels.registry.sinks import CaptureSink

CPU = model.Target(vendor="cpu", arch="cpu", device_name="cpu (Triton interpreter)")
SUITE_SETTINGS = ("TORCHINDUCTOR_VEC_ISA_OK",)  # conftest's settings that a clean environment keeps


def suite_settings() -> dict[str, str]:
    """The suite's own settings (conftest.py) as this process has them: what a helper that starts a program
    with a clean environment gives it back, so every process of the suite keys Inductor's caches alike."""
    return {name: os.environ[name] for name in SUITE_SETTINGS if name in os.environ}


H100 = model.Target(
    vendor="nvidia", arch="sm90", device_name="NVIDIA H100 80GB HBM3", multiprocessor_count=132
)
TRITON_39 = model.CompilerFingerprint("3.9.0", "a" * 64, "b" * 64, (("ptxas", "13.4.59"),), "2.13.0")
TRITON_38 = model.CompilerFingerprint("3.8.0", "c" * 64, "b" * 64, (("ptxas", "13.0.88"),), "2.12.0")


def source_hash(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def config(block: int, warps: int = 4, stages: int = 3) -> model.Config:
    return model.Config.of({"BLOCK": block}, num_warps=warps, num_stages=stages)


def entry(
    kernel: str = "pkg.matmul_kernel",
    key: model.TuningKey = (128, "torch.float16"),
    block: int = 64,
    time_ms: float = 1.0,
    runner_up: float | None = 2.0,
) -> model.Entry:
    best = config(block)
    timings = [model.Timing(best, time_ms)]
    if runner_up is not None:
        timings.append(model.Timing(config(block * 2, warps=8), runner_up))
    return model.Entry(
        kernel=model.KernelIdentity(kernel, source_hash(kernel), ("x_ptr", "n", "BLOCK")),
        key=key,
        best=best,
        timings=tuple(timings),
        rejected=(model.Rejection(config(4096), "wrong numbers: max error 0.5 > 0.01"),),
        found_by=model.FoundBy.EXHAUSTIVE,
        configs_benchmarked=len(timings),
    )


def results(
    *entries: model.Entry, target: model.Target = CPU, compiler: model.CompilerFingerprint = TRITON_39
) -> model.Results:
    header = model.Header(target, compiler, model.Producer.TUNE, "0.1.0", "2026-11-22T12:00:00Z")
    return model.Results(header, tuple(sorted(entries, key=model.entry_sort_key)))


def with_artifact(
    item: model.Entry, payload: bytes = b"\x7fELF cubin"
) -> tuple[model.Entry, dict[str, bytes]]:
    """`item` with a compiled kernel of its winner (fake bytes), and the blobs that artifact names."""
    meta = b'{"name": "k"}'
    files = tuple(
        model.ArtifactFile(name, hashlib.sha256(data).hexdigest(), len(data))
        for name, data in (("k.json", meta), ("k.cubin", payload))
    )
    cache_key = hashlib.sha256(repr(item.slot).encode() + payload).hexdigest()
    artifact = model.Artifact(cache_key, "cuda:90:32", files, item.best)
    blobs = {f.sha256: data for f, data in zip(files, (meta, payload), strict=True)}
    return dataclasses.replace(item, artifacts=(artifact,)), blobs


def tuned_file(corpus: str, path: Path) -> Path:
    """`path`, written by `tuned-kernels tune --corpus CORPUS` on the cpu target (a real tune, in a process)."""
    subprocess.run(
        [sys.executable, "-m", "tuned_kernels", "tune", "--corpus", corpus, "-o", str(path)],
        check=True,
        capture_output=True,
        env={**os.environ, "TRITON_INTERPRET": "1"},
        timeout=300,
    )
    return path


def graphs_made_with_torch(results: model.Results, version: str) -> model.Results:
    """The torch.compile graph entries as if made with torch `version` (their source: torch's)."""
    from tuned_kernels.inductor_edge import graphs

    identity = model.KernelIdentity(graphs.NAME, source_hash(f"torch {version}"))
    entries = tuple(
        dataclasses.replace(e, kernel=identity) if e.kernel.name == graphs.NAME else e
        for e in results.entries
    )
    return results.with_entries(entries)


def script_module(path: Path) -> types.ModuleType:
    """A script that is no package's module (ci/, benchmarks/), loaded from its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def warnings_in(stderr: str) -> list[str]:
    """A program's warnings from tuned-kernels: each one line of its own, `tuned-kernels: ...`, never the
    warnings module's `file.py:241: TunedKernelsWarning: ...` and source line."""
    assert "TunedKernelsWarning" not in stderr, stderr[-2000:]
    return [line for line in stderr.splitlines() if line.startswith("tuned-kernels: ")]


def capture_sink(path: Path) -> CaptureSink:
    """The sink a capture into `path` writes through (on the cpu target, with Triton 3.9)."""
    from tuned_kernels.registry.sinks import CaptureSink

    from tuned_kernels.errors import warn

    header = model.Header(CPU, TRITON_39, model.Producer.CAPTURE, "0.1.0", "2026-11-22T12:00:00Z")
    return CaptureSink(path, header, warn)


def program_environment(folder: Path) -> dict[str, str]:
    """This environment without tuned-kernels' and Inductor's settings (the suite's own kept), for a program
    run with `folder` as its HOME and empty Inductor, Triton and overlay caches of its own there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUNED_KERNELS", "TORCHINDUCTOR"))}
    return (
        env
        | suite_settings()
        | {
            "HOME": str(folder),
            "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"),
            "TRITON_CACHE_DIR": str(folder / "triton"),
            "TUNED_KERNELS_CACHE_DIR": str(folder / "overlay"),
        }
    )


def site_packages(python: Path) -> Path:
    """Where `python` (another environment's) installs pure-Python packages."""
    where = [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    return Path(subprocess.run(where, capture_output=True, text=True, check=True, timeout=120).stdout.strip())


def environment_with_torch(folder: Path) -> Path:
    """A fresh virtual environment at `folder` (pip and nothing else of its own) that has PyTorch: torch and
    the distributions it requires, linked from this environment's installs (the files `pip install torch`
    writes, without 16 s of unpacking them). Its `bin` folder."""
    import importlib.metadata
    import sysconfig

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
    there = site_packages(folder / "bin" / "python")
    here = Path(sysconfig.get_paths()["purelib"])
    own = {canonicalize_name(d.metadata["Name"]) for d in importlib.metadata.distributions(path=[str(there)])}
    wanted, linked = ["torch"], set()
    while wanted:
        name = canonicalize_name(wanted.pop())
        if name in linked:
            continue
        linked.add(name)
        distribution = importlib.metadata.distribution(name)
        for text in distribution.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                wanted.append(requirement.name)
        if name in own:  # the fresh environment's own (setuptools): pip leaves or upgrades it, as it would
            continue
        for top in {Path(str(file)).parts[0] for file in distribution.files or []} - {".."}:
            if (here / top).exists() and not (there / top).exists():
                (there / top).symlink_to(here / top)
    return folder / "bin"
