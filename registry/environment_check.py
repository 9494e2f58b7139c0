"""Which `TUNED_KERNELS*` settings cannot be honoured as set: a value outside those a variable takes, a
variable name no one reads (a misspelling, named with the nearest real one), a path that names nothing.
Each problem is one line naming the variable, what it holds and what it takes; the program goes on with the
default, and `tuned-kernels doctor` marks each as a fail. The file system is asked through `kind_of`, but
for the key files TUNED_KERNELS_TRUSTED_KEYS names (read as serving reads them).
"""

from __future__ import annotations

import contextlib
import difflib
import os
from collections.abc import Callable, Mapping

from tuned_kernels.hardware.archs import KNOWN_ARCHS
from tuned_kernels.hardware.probe import TARGET_ENV, known_target
from tuned_kernels.registry import settings
from tuned_kernels.registry.settings import ON_MISS, STALE, key_named

from tuned_kernels.errors import one_line
from tuned_kernels.results.discovery import PATH_ENV
from tuned_kernels.results.lock import ENV as LOCK_ENV
from tuned_kernels.results.overlay import CACHE_ENV
from tuned_kernels.setting_values import (
    MAX_MISS_JOBS,
    SWITCH,
    SWITCH_TAKES,
    VERBOSE_TAKES,
    choice,
    count,
    verbosity,
)
from tuned_kernels.triton_edge.measuring import MISS_JOBS_ENV

TARGET = TARGET_ENV

# variable: the values it takes (None: any text; checked below where it names paths). The names are the
# constants the modules reading each variable read it by, so a variable renamed there is renamed here.
CHOICES: dict[str, tuple[str, ...] | None] = {
    "TUNED_KERNELS": SWITCH,
    settings.VERBOSE_ENV: None,  # a switch, or a higher level
    settings.WARMUP_ENV: SWITCH,
    settings.COMPILED_ENV: SWITCH,
    settings.FRAMES_ENV: SWITCH,
    settings.STRICT_ENV: SWITCH,
    settings.ON_MISS_ENV: ON_MISS,
    settings.STALE_ENV: STALE,
    TARGET_ENV: None,  # a target tuned-kernels knows, as `detect` spells it (sm90, SM_90)
    MISS_JOBS_ENV: None,
    PATH_ENV: None,
    settings.TRUSTED_KEYS_ENV: None,  # keys or key files, comma-separated
    LOCK_ENV: None,  # a lock file (tuned-kernels lock): only the bundles it names are served
    CACHE_ENV: None,
    settings.CAPTURE_ENV: None,  # set by `tuned-kernels capture`
    settings.REPORT_ENV: None,  # set by `tuned-kernels coverage`
    "TUNED_KERNELS_GPU_TESTS": None,  # the test suite's GPU tests (ci/gpu_run.sh)
}
WRITTEN_PATHS = (CACHE_ENV, settings.CAPTURE_ENV, settings.REPORT_ENV)  # where we write
FOLDERS = ("dir", "empty", "missing")  # what TUNED_KERNELS_CACHE_DIR may name (a missing one is made)
KindOf = Callable[[str], str]  # "file", "dir", "empty" (a folder holding no results file), "missing", "other"


def kind_of_path(path: str) -> str:
    if os.path.isdir(path):
        return "dir"
    if os.path.isfile(path):
        return "file"
    return "missing" if not os.path.lexists(path) else "other"


def kind_of_bundle_path(path: str) -> str:
    """As `kind_of_path`, and "empty" for a folder holding no results file."""
    kind = kind_of_path(path)
    if kind == "dir":
        from pathlib import Path

        from tuned_kernels.results.locate import holds_results_file

        with contextlib.suppress(OSError):
            return "dir" if holds_results_file(Path(path)) else "empty"
    return kind


def path_problem(path: str, kind_of: KindOf) -> str:
    """What is wrong with one TUNED_KERNELS_PATH entry ("" for nothing): it names nothing (perhaps several
    paths joined by another separator than the platform's), or a folder with no results file."""
    name = PATH_ENV
    kind = kind_of(path)
    if kind == "missing":
        joined = f" (several paths are joined by {os.pathsep!r})" if "," in path or ";" in path else ""
        return (
            f"{name} names {one_line(path, 120)}: no such file or folder{joined}; nothing is served from it"
        )
    if kind == "empty":
        return f"{name} names {one_line(path, 120)}: a folder with no results files in it; nothing is served from it"
    return ""


def has_gpu() -> bool:
    """Whether kernels for a GPU target can run here: a GPU, or Triton's interpreter asked for."""
    from tuned_kernels.triton_edge.interpreter import interpreting

    if interpreting():
        return True
    import torch

    return torch.cuda.device_count() > 0  # NVML's count: CUDA is not initialised (forked children keep it)


def environment_problems(
    environ: Mapping[str, str], kind_of: KindOf | None = None, gpu_present: Callable[[], bool] = has_gpu
) -> list[str]:
    """Each setting in `environ` that cannot be honoured, in one line (`kind_of`: what a path names; by
    default the file system, folders of bundles looked into)."""
    problems: list[str] = []
    for name in sorted(n for n in environ if n == "TUNED_KERNELS" or n.startswith("TUNED_KERNELS_")):
        value = environ[name].strip()
        shown = one_line(environ[name], 80)
        said = len(problems)
        if name not in CHOICES:
            near = difflib.get_close_matches(name, list(CHOICES), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            problems.append(f"{name} is not a tuned-kernels setting{hint}; it is ignored")
            continue
        choices = CHOICES[name]
        if choices is not None and choice(value, choices) is None and value != "":
            takes = (
                ", ".join(choices[:-1]) + " or " + choices[-1]
                if len(choices) < 4
                else "one of " + ", ".join(choices)
            )
            problems.append(f"{name}={shown}: takes {SWITCH_TAKES if choices == SWITCH else takes}; ignored")
        elif name == settings.VERBOSE_ENV and value and verbosity(value) is None:
            problems.append(f"{name}={shown}: takes {VERBOSE_TAKES}; ignored")
        elif name == TARGET and value and not known_target(value):
            problems.append(f"{name}={shown}: takes one of {', '.join(KNOWN_ARCHS)}; ignored")
        elif name == TARGET and value and value.lower() != "cpu" and not gpu_present():
            problems.append(
                f"{name}={shown}: this machine has no GPU to run its kernels, which will fail to launch (unset "
                "it to run them on Triton's interpreter)"
            )
        elif name == MISS_JOBS_ENV and value and count(value) is None:
            problems.append(f"{name}={shown}: takes a whole number from 1 to {MAX_MISS_JOBS}; ignored")
        elif name == PATH_ENV:
            problems += [
                path_problem(p, kind_of or kind_of_bundle_path) for p in value.split(os.pathsep) if p
            ]
            problems = [p for p in problems if p]
        elif name == settings.TRUSTED_KEYS_ENV and value:
            problems += [
                f"{name} names {one_line(e, 80)}: not a key (ed25519:<base64>) nor a file holding one; it trusts "
                "nothing"
                for e in (e.strip() for e in value.split(","))
                if e and key_named(e) is None
            ]
        elif (
            name == CACHE_ENV
            and value
            and (kind_of or kind_of_path)(os.path.expanduser(value)) not in FOLDERS
        ):
            problems.append(f"{name}={shown}: not a folder; the overlay of tuned misses is not kept")
        relative = value and not os.path.isabs(os.path.expanduser(environ[name]))  # as it is used
        if name in WRITTEN_PATHS and relative and len(problems) == said:  # one line for one setting
            problems.append(
                f"{name}={shown} is relative: it names {one_line(os.path.abspath(value), 120)}, in this working "
                "folder, and another in each (an absolute path names one place wherever the program runs)"
            )
    return problems
