"""A module whose forward calls a global `ACT` (`relu` or `tanh`, the first argument), compiled with torch's
caching precompile on: `capture` (the second argument) saves its Dynamo frame at exit, `serve` loads what
the cache directory holds. Prints the frames Dynamo traced and loaded and the largest difference from eager
PyTorch: `RUN {...}`. Run by benchmarks/dynamo_precompile_guards.py."""

import atexit
import itertools
import json
import sys

import torch
import torch._dynamo.bytecode_transformation
import torch._dynamo.config
from torch._dynamo.utils import counters

torch._dynamo.config.caching_precompile = True
if sys.argv[2] == "serve":  # torch's own fix-up for a second trace after a loaded frame
    torch._dynamo.bytecode_transformation._unique_id_counter = itertools.count(10**6)
else:
    atexit.register(torch.compiler.save_cache_artifacts)
torch.manual_seed(0)
ACT = torch.relu if sys.argv[1] == "relu" else torch.tanh


class Layer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ACT(self.lin(x))


layer, x = Layer(), torch.randn(4, 16)
with torch.no_grad():
    out = torch.compile(layer)(x)
    diff = (out - layer(x)).abs().max().item()
run = {
    "frames_traced": counters["frames"]["total"],
    "frames_loaded": counters["dynamo_cache"]["dynamo_cache_hit"],
    "max_diff_vs_eager": diff,
}
print("RUN " + json.dumps(run))
