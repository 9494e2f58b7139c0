"""Where a torch.compile first call spends its time, and which GEMM choices it took (diagnostics): wraps
Inductor's autotuning steps and the Inductor edge's look-ups to log, to `INDUCTOR_DIAGNOSE` (stderr by
default), each GEMM look-up (its FX node, the node's users, a short hash of the key, the config served),
each final choice Inductor's scheduler took, the calls and seconds of Inductor's autotuning steps
(coordinate descent, config benchmarks, precompiles), Inductor's own `compile_times` and how many kernels
the bundles' compiled kernels served (logged by the caller). Used by benchmarks/inductor_first_call.py."""

from __future__ import annotations

import collections
import functools
import hashlib
import os
import time
from collections.abc import Callable
from typing import Any

# what the wrapped methods did in this process (diagnostics only: nothing reads them but `report`)
calls: collections.Counter[str] = collections.Counter()
seconds: collections.defaultdict[str, float] = collections.defaultdict(float)


def log(*parts: object) -> None:
    with open(os.environ.get("INDUCTOR_DIAGNOSE", "/dev/stderr"), "a") as f:
        print(*parts, file=f)


def timed(cls: type, method: str) -> None:
    original = getattr(cls, method)

    @functools.wraps(original)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            calls[method] += 1
            seconds[method] += time.perf_counter() - t0

    setattr(cls, method, wrapped)


def after(cls: type, method: str, then: Callable[..., None]) -> None:
    original = getattr(cls, method)

    @functools.wraps(original)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        then(*args, result=result)
        return result

    setattr(cls, method, wrapped)


def watch_inductor() -> None:
    from torch._inductor import select_algorithm
    from torch._inductor.ir import MultiTemplateBuffer
    from torch._inductor.runtime import triton_heuristics

    for method in ("coordinate_descent_tuning", "benchmark_all_configs", "precompile"):
        timed(triton_heuristics.CachingAutotuner, method)
    timed(select_algorithm.AlgorithmSelectorCache, "__call__")

    def final(buffer: Any, caller: Any, result: Any) -> None:
        ktc = getattr(caller, "annotations", {}).get("ktc")
        params = dict(ktc.params.to_kwargs()) if ktc is not None else {}
        log("FINAL", buffer.get_name(), getattr(caller, "name", "?"), params)

    after(MultiTemplateBuffer, "finalize_as_triton_caller", final)


def watch_lookups() -> None:
    from torch._inductor.virtualized import V

    from tuned_kernels.inductor_edge.choices import TunedChoices
    from tuned_kernels.inductor_edge.keys import config_of, key_of

    def looked_up(
        _choices: Any, _offered: Any, kernel_inputs: Any, _templates: Any, op_name: str, *_: Any, result: Any
    ) -> None:
        node = V.graph.current_node
        users = sorted(str(u.target) for u in node.users) if node is not None else []
        key = hashlib.sha1(repr(key_of(kernel_inputs)).encode()).hexdigest()[:8]
        config = config_of(result[0]) if len(result) == 1 else None
        served = config.describe() if config is not None else f"{len(result)} choices"
        log("LOOKUP", getattr(node, "name", "?"), op_name, key, "users", users, served)

    after(TunedChoices, "_fallback", looked_up)


def report() -> None:
    from torch._dynamo.utils import compile_times

    log("CALLS", dict(calls), {k: round(v, 2) for k, v in seconds.items()})
    log(compile_times(repr="str", aggregate=True))
