"""How an Inductor GEMM choice becomes an entry of the results format.

A choice is one `KernelTemplateChoice`: a template (`aten::mm`, `triton::mm`, ...) and its parameters. It is
stored under the kernel `inductor.<op>` (mm, addmm, bmm, ...), whose source is torch's version (Inductor's
templates and heuristics are torch's code), at the key torch's own look-up table uses for the op's inputs:
their dtypes, sizes and strides and the op's scalars. The config is the template's name and parameters as
they are, so a stored config is served only when it equals one Inductor itself offers for those inputs.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from typing import Any

from tuned_kernels import model

PREFIX = "inductor."
TEMPLATE = "template_id"  # the config kwarg naming the template (as torch's look-up table does)
FUSION = ".fusion"  # `inductor.mm.fusion`: the fusions a GEMM took (fusion.py)


@functools.cache
def torch_source_hash() -> str:
    """Stands for the source of Inductor's templates and heuristics: torch's version."""
    import torch

    return hashlib.sha256(f"torch {torch.__version__}".encode()).hexdigest()


def identity_of(op_name: str) -> model.KernelIdentity:
    return model.KernelIdentity(f"{PREFIX}{op_name}", torch_source_hash())


def key_of(kernel_inputs: Any) -> model.TuningKey:
    from torch._inductor.lookup_table import LookupTableChoices

    return (LookupTableChoices._generate_kernel_inputs_key(kernel_inputs),)


def config_of(ktc: Any) -> model.Config | None:
    """The config of one of Inductor's template choices (None when a parameter is not a plain value)."""
    params = dict(ktc.params.to_kwargs())
    if not all(isinstance(v, (bool, int, float, str)) or v is None for v in params.values()):
        return None
    launch = {k: params.pop(k) for k in ("num_warps", "num_stages") if isinstance(params.get(k), int)}
    params[TEMPLATE] = ktc.template.uid
    return model.Config.of(params, **launch)


def compiled_only_to_time(kernel_name: str) -> bool:
    """Whether a Triton kernel compiled in this process is one Inductor compiles only to time it: a GEMM
    template's candidate config, named after the template (`triton_mm`), or a fusion it tries (`triton_`).
    The kernels of the code Inductor generates are numbered (`triton_tem_fused_mm_7`), and a program's own
    kernels are not named after one of Inductor's templates."""
    if kernel_name == "triton_":
        return "torch._inductor" in sys.modules
    select_algorithm = sys.modules.get("torch._inductor.select_algorithm")
    templates = getattr(getattr(select_algorithm, "TritonTemplate", None), "all_templates", {})
    return kernel_name.startswith("triton_") and kernel_name.removeprefix("triton_") in templates
