"""`tuned-kernels merge OLD... -o NEW --carry-over MODULE`: the autotuned kernels (and implementation
choices) a module defines, by their current and previous identities, so that entries of files made before
identity by source move to the kernels as they are now identified (`results.merge.carry_over`)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

from tuned_kernels import model
from tuned_kernels.choice import ImplementationChoice
from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.triton_edge.keys import autotuner_class, kernel_identity


def identities_in(modules: Sequence[str]) -> list[model.KernelIdentity]:
    """Every autotuned kernel the named modules define (imported as `python -c 'import NAME'` would, from
    the current directory)."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    kinds = (autotuner_class(), ImplementationChoice)
    found: dict[str, model.KernelIdentity] = {}
    for name in modules:
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            raise TunedKernelsError(
                f"--carry-over {name}: cannot import it: {type(exc).__name__}: {exc}"
            ) from None
        for value in vars(module).values():
            if isinstance(value, kinds):
                identity = kernel_identity(value)
                found[identity.name] = identity
    if not found:
        raise TunedKernelsError(f"--carry-over {', '.join(modules)}: defines no autotuned kernel")
    return list(found.values())
