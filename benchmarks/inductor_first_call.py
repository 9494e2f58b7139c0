"""Where a torch.compile first call spends its time, and which GEMM choices it took (diagnostics, GPU):

    INDUCTOR_DIAGNOSE=log.txt python benchmarks/inductor_first_call.py MODEL MODE

runs tests/corpora/inductor_model.py MODEL MODE in this process and appends to log.txt: each GEMM look-up
of the Inductor edge (its FX node, the node's users, a short hash of the key, the config served), each
final choice Inductor's scheduler took, the calls and seconds of Inductor's autotuning steps (coordinate
descent, config benchmarks, precompiles), Inductor's own `compile_times` and how many kernels the bundle's
artifact store served here. Run it under `tuned-kernels capture`, with `TUNED_KERNELS=1`, or neither.
Combine with INDUCTOR_MODEL_CODE (the kernels of the generated code) to compare a capture and a serve.
"""

from __future__ import annotations

import atexit
import runpy
import sys
from pathlib import Path

MODEL = Path(__file__).resolve().parents[1] / "tests/corpora/inductor_model.py"


def report() -> None:
    from tuned_kernels.registry import installed_registry

    from tuned_kernels.inductor_edge import diagnose

    diagnose.report()
    registry = installed_registry()
    if registry is not None:
        compiled = registry.summary(quiet=True)["compiled_kernels"]
        diagnose.log("ARTIFACTS held", compiled["held"], "served here", compiled["served"])


def main() -> None:
    from tuned_kernels.inductor_edge import diagnose

    diagnose.watch_inductor()  # importing Inductor (with TUNED_KERNELS=1, its hooks are installed first)
    diagnose.watch_lookups()
    atexit.register(report)
    sys.argv = [str(MODEL), *sys.argv[1:]]
    runpy.run_path(str(MODEL), run_name="__main__")


if __name__ == "__main__":
    main()
