"""How a registry serves, read once from the environment where the registry is enabled (never from inside
it): TUNED_KERNELS_ON_MISS, TUNED_KERNELS_STALE, TUNED_KERNELS_CAPTURE, TUNED_KERNELS_REPORT,
TUNED_KERNELS_WARMUP, TUNED_KERNELS_VERBOSE, TUNED_KERNELS_COMPILED, TUNED_KERNELS_FRAMES,
TUNED_KERNELS_STRICT."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tuned_kernels.decision import Policy
from tuned_kernels.setting_values import choice, switch, verbosity

ON_MISS = ("predict", "tune", "nearest")
STALE = ("reject", "seed")

ON_MISS_ENV = "TUNED_KERNELS_ON_MISS"  # predict (default) | tune | nearest
STALE_ENV = "TUNED_KERNELS_STALE"  # reject (default) | seed
CAPTURE_ENV = "TUNED_KERNELS_CAPTURE"  # a results file to record every decision into (tuned-kernels capture)
REPORT_ENV = (
    "TUNED_KERNELS_REPORT"  # a file each process appends its hits and misses to (tuned-kernels coverage)
)
WARMUP_ENV = "TUNED_KERNELS_WARMUP"  # 0: no background warm-up (Triton builds its host modules at launch)
VERBOSE_ENV = "TUNED_KERNELS_VERBOSE"  # 1: a short summary of what was served and tuned, on stderr at exit
COMPILED_ENV = "TUNED_KERNELS_COMPILED"  # 0: serve the bundles' configs, never their compiled kernels
FRAMES_ENV = "TUNED_KERNELS_FRAMES"  # 0: Dynamo traces every torch.compile'd function (graphs still served)
TRUSTED_KEYS_ENV = "TUNED_KERNELS_TRUSTED_KEYS"  # keys or key files, comma-separated: code only from theirs
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
    frames: bool = True  # load the bundles' Dynamo frames instead of tracing (frames.py)
    strict: bool = False  # stop the program instead of tuning a miss or compiling a graph (a CI's proof)
    trusted_keys: frozenset[str] | None = (
        None  # set: compiled kernels and graphs only from bundles they signed
    )

    @staticmethod
    def from_environ(environ: Mapping[str, str]) -> Settings:
        capture = environ.get(CAPTURE_ENV)
        report = environ.get(REPORT_ENV)
        policy = Policy(
            on_miss=_on_miss(choice(environ.get(ON_MISS_ENV), ON_MISS)),
            stale="seed" if choice(environ.get(STALE_ENV), STALE) == "seed" else "reject",
            measure_always=bool(capture),
        )
        return Settings(
            policy,
            Path(capture) if capture else None,
            Path(report) if report else None,
            warmup=switch(environ.get(WARMUP_ENV), True),
            verbose=bool(verbosity(environ.get(VERBOSE_ENV))),
            compiled=switch(environ.get(COMPILED_ENV), True),
            frames=switch(environ.get(FRAMES_ENV), True),
            strict=switch(environ.get(STRICT_ENV), False) and not capture,
            trusted_keys=trusted_keys(environ.get(TRUSTED_KEYS_ENV)),
        )


def trusted_keys(text: str | None) -> frozenset[str] | None:
    """The keys `TUNED_KERNELS_TRUSTED_KEYS` names, each written out or in a file (None: not set). An
    entry that names no key trusts nothing (the check says so): a mistyped key must not widen trust."""
    if text is None or not text.strip():
        return None
    named = (key_named(entry.strip()) for entry in text.split(","))
    return frozenset(key for key in named if key is not None)


def key_named(entry: str) -> str | None:
    """The key an entry of TUNED_KERNELS_TRUSTED_KEYS names: written out, or the first line of a file."""
    from tuned_kernels.errors import TunedKernelsError
    from tuned_kernels.results.files import read_regular_file
    from tuned_kernels.signing import KEY_PREFIX, MAX_SIGNATURE_BYTES, SignatureError, public_key_bytes

    text = entry
    if not entry.startswith(KEY_PREFIX):
        try:  # a regular file, bounded, opened without blocking (a FIFO does not hang the program)
            lines = (
                read_regular_file(entry, MAX_SIGNATURE_BYTES).decode("utf-8", "replace").strip().splitlines()
            )
        except TunedKernelsError:
            return None
        text = lines[0].strip() if lines else ""
    try:
        public_key_bytes(text)
    except SignatureError:
        return None
    return text


def _on_miss(named: str | None) -> Literal["predict", "tune", "nearest"]:
    return "tune" if named == "tune" else "nearest" if named == "nearest" else "predict"
