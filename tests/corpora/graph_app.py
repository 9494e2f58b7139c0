"""A small torch.compile program for the CPU: one training step of a layer (a forward and a backward graph,
each with a C++ kernel Inductor generates). Checks the loss and a gradient against eager PyTorch and prints
Inductor's counts of graphs found in its caches and compiled: `GRAPHS {...}`."""

import json

import torch
from torch._dynamo.utils import counters

torch.manual_seed(0)
layer = torch.nn.Linear(16, 16)
x = torch.randn(4, 16)


def step(inputs: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(layer(inputs)).pow(2).sum()


loss = torch.compile(step)(x)
loss.backward()
grad, layer.weight.grad = layer.weight.grad, None
expected = step(x)
expected.backward()
torch.testing.assert_close(loss, expected)
torch.testing.assert_close(grad, layer.weight.grad)
graphs = {
    "fxgraph_hits": counters["inductor"]["fxgraph_cache_hit"],
    "fxgraph_misses": counters["inductor"]["fxgraph_cache_miss"],
    "autograd_hits": counters["aot_autograd"]["autograd_cache_hit"],
    "autograd_misses": counters["aot_autograd"]["autograd_cache_miss"],
}
print("GRAPHS " + json.dumps(graphs))
