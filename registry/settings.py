"""How a registry serves, read once from the environment where the registry is enabled (never from inside
it): TUNED_KERNELS_ON_MISS, TUNED_KERNELS_STALE, TUNED_KERNELS_CAPTURE, TUNED_KERNELS_REPORT,
TUNED_KERNELS_WARMUP, TUNED_KERNELS_VERBOSE, TUNED_KERNELS_COMPILED, TUNED_KERNELS_STRICT."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tuned_kernels.decision import Policy
from tuned_kernels.setting_values import choice, switch

ON_MISS = ("tune", "nearest")
STALE = ("reject", "seed")

ON_MISS_ENV = "TUNED_KERNELS_ON_MISS"  # tune (default) | nearest
STALE_ENV = "TUNED_KERNELS_STALE"  # reject (default) | seed
CAPTURE_ENV = "TUNED_KERNELS_CAPTURE"  # a results file to record every decision into (tuned-kernels capture)
REPORT_ENV = (
    "TUNED_KERNELS_REPORT"  # a file each process appends its hits and misses to (tuned-kernels coverage)
)
WARMUP_ENV = "TUNED_KERNELS_WARMUP"  # 0: no background warm-up (Triton builds its host modules at launch)
VERBOSE_ENV = "TUNED_KERNELS_VERBOSE"  # 1: a short summary of what was served and tuned, on stderr at exit
COMPILED_ENV = "TUNED_KERNELS_COMPILED"  # 0: serve the bundles' configs, never their compiled kernels
STRICT_ENV = (
    "TUNED_KERNELS_STRICT"  # 1: stop, with one line, instead of tuning or compiling what bundles lack
)


@dataclass(frozen=True)
class Settings:
    """Serve (the default), capture (`capture` set: every decision measured and recorded there, compiled
    kernels kept) or coverage (`report` set: hits and misses appended there at exit)."""

    policy: Policy = field(default_factory=Policy)
    capture: Path | None = None
    report: Path | None = None
    warmup: bool = True  # open bundles and build Triton's host modules in the background (warmup.py)
    verbose: bool = False  # print `exit_summary` to stderr when the process ends
    compiled: bool = True  # place the bundles' compiled kernels in Triton's cache (else Triton compiles)
    strict: bool = False  # stop the program instead of tuning a miss or compiling a graph (a CI's proof)

    @staticmethod
    def from_environ(environ: Mapping[str, str]) -> Settings:
        capture = environ.get(CAPTURE_ENV)
        report = environ.get(REPORT_ENV)
        policy = Policy(
            on_miss="nearest" if choice(environ.get(ON_MISS_ENV), ON_MISS) == "nearest" else "tune",
            stale="seed" if choice(environ.get(STALE_ENV), STALE) == "seed" else "reject",
            measure_always=bool(capture),
        )
        return Settings(
            policy,
            Path(capture) if capture else None,
            Path(report) if report else None,
            warmup=switch(environ.get(WARMUP_ENV), True),
            verbose=switch(environ.get(VERBOSE_ENV), False),
            compiled=switch(environ.get(COMPILED_ENV), True),
            strict=switch(environ.get(STRICT_ENV), False) and not capture,
        )
