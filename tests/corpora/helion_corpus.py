"""A corpus of the two Helion kernels of tests/helion_program.py (searched on the CPU by its wall-clock
search): `tune` runs each op, and Helion's search, wrapped in tuned-kernels' cache, finds its config."""

import torch
from tuned_kernels.aot.corpus import Case, KernelFamily

from tests import helion_program


def _inputs(case, device, generator):
    shape = (case["rows"], case["columns"])
    return {"x": torch.randn(shape, generator=generator), "y": torch.randn(shape, generator=generator)}


CORPUS = (
    KernelFamily(
        name="helion_add",
        kernel=helion_program.add,
        make_inputs=_inputs,
        run=lambda i: helion_program.add(i["x"], i["y"]),
        reference=lambda i: i["x"].double() + i["y"].double(),
        tolerance=(1e-5, 1e-5),
        shapes={"quick": [Case.of(rows=64, columns=32)]},
    ),
    KernelFamily(
        name="helion_row_sum",
        kernel=helion_program.row_sum,
        make_inputs=_inputs,
        run=lambda i: helion_program.row_sum(i["x"]),
        reference=lambda i: i["x"].double().sum(-1),
        tolerance=(1e-4, 1e-4),
        shapes={"quick": [Case.of(rows=64, columns=32)]},
    ),
)

# a family whose reference the kernel does not compute: its search's winner fails the check
WRONG = (
    KernelFamily(
        name="helion_add_checked_as_sub",
        kernel=helion_program.add,
        make_inputs=_inputs,
        run=lambda i: helion_program.add(i["x"], i["y"]),
        reference=lambda i: i["x"].double() - i["y"].double(),
        tolerance=(1e-5, 1e-5),
        shapes={"quick": [Case.of(rows=64, columns=32)]},
    ),
)
