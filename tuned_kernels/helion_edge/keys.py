"""How a Helion kernel's autotuning becomes an entry of the results format.

A Helion kernel is stored under `helion.<module>.<name>` (the module as imported, as for Triton kernels), its
source hash the digest of the kernel function (source_identity.py) and its backend. The tuning key holds what
else Helion's own cache key holds: the Helion and torch versions (Helion generates the kernel's code with
both), the hash of the kernel's config space (the knobs and their ranges for these inputs), and the
specialization Helion binds the kernel for (dtypes, sizes, strides, devices of the inputs). The target and
the compiler are the bundle's. So a bundle tuned with another Helion or torch is another key (`mismatch`
says which), and an edited kernel is another source.

A config is Helion's whole config as canonical JSON in one kwarg; it is served only when the kernel's own
config spec accepts it (`helion_config_of`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from importlib import metadata
from typing import Any

from tuned_kernels import model
from tuned_kernels.source_identity import module_name, source_digest

PREFIX = "helion."
CONFIG_KWARG = "helion_config"
MAX_CONFIG_CHARS = 16 * 1024  # a stored config longer than this is not read (Helion's are < 1 KiB)
VERSIONED = ("helion ", "torch ", "config space ")  # the key's first elements, in this order


@functools.cache
def versions() -> tuple[str, str]:
    import torch

    return f"helion {metadata.version('helion')}", f"torch {torch.__version__}"


def identity_of(kernel: Any) -> model.KernelIdentity:
    """A `helion.Kernel`'s identity (computed once per kernel)."""
    cached = getattr(kernel, "_tuned_kernels_identity", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    fn = kernel.fn
    digest = hashlib.sha256(f"{source_digest(fn)}\x00{kernel.settings.backend}".encode()).hexdigest()
    identity = model.KernelIdentity(f"{PREFIX}{module_name(fn)}.{fn.__qualname__}", digest)
    kernel._tuned_kernels_identity = identity
    return identity


def key_of(bound: Any, args: Sequence[Any]) -> model.TuningKey:
    """The key of a bound kernel for these arguments: versions, config space, specialization."""
    kernel = bound.kernel
    specialized = kernel._create_bound_kernel_cache_key(
        bound, tuple(args), kernel._base_specialization_key(args)
    )
    files = bound.settings.autotune_search_acf or None
    space = bound.config_spec.cache_fingerprint_hash(advanced_controls_files=files)
    return (
        *versions(),
        f"config space {space}",
        repr(specialized.specialization_key),
        repr(specialized.extra_results),
    )


def mismatch(stored: model.TuningKey, running: model.TuningKey) -> str | None:
    """What differs between two keys of one kernel other than the specialization: another Helion, torch or
    config space ("helion 1.5.0, running 1.5.1"); None when those agree."""
    for i, prefix in enumerate(VERSIONED):
        if len(stored) <= i or len(running) <= i:
            return None
        ours, theirs = str(running[i]), str(stored[i])
        if ours != theirs and theirs.startswith(prefix):
            name = prefix.strip()
            if name == "config space":
                return "another config space (another Helion or other settings)"
            return f"{theirs}, running {ours.removeprefix(prefix)}"
    return None


def config_of(config: Any) -> model.Config:
    """A `helion.Config` as a stored config (its warps and stages shown beside the JSON)."""
    values = dict(config.config)
    launch = {k: values[k] for k in ("num_warps", "num_stages") if type(values.get(k)) is int}
    text = json.dumps(values, sort_keys=True, separators=(",", ":"))
    return model.Config.of({CONFIG_KWARG: text}, **launch)


def helion_config_of(config: model.Config, config_spec: Any) -> Any | None:
    """The `helion.Config` a stored config holds, when the kernel's config spec accepts it as it is; None
    for anything else (not ours, not JSON, knobs it does not have or values out of range)."""
    import helion

    kwargs = dict(config.kwargs)
    text = kwargs.get(CONFIG_KWARG)
    if set(kwargs) != {CONFIG_KWARG} or not isinstance(text, str) or len(text) > MAX_CONFIG_CHARS:
        return None
    try:
        values = json.loads(text)
    except ValueError:
        return None
    if not isinstance(values, dict) or config_of(helion.Config(**values)) != config:
        return None
    unknown = set(values) - set(config_spec.supported_config_keys())
    if unknown:
        return None
    try:
        config_spec.normalized_config(values)
    except Exception:  # Helion's InvalidConfig, or a value of a type it does not expect
        return None
    return helion.Config(**values)
