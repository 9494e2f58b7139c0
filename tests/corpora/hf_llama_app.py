"""A model nobody here wrote: a two-layer Llama of Hugging Face transformers (built from a config: no
download), compiled whole by torch.compile on the CPU. Checks its logits against eager PyTorch and prints a
digest of them, Inductor's graph look-ups and, where tuned-kernels serves, what it says of the graphs:
`LLAMA {...}`."""

import hashlib
import json
import os

import torch
from torch._dynamo.utils import counters
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
config = LlamaConfig(
    vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, max_position_embeddings=64,
)  # fmt: skip
model = LlamaForCausalLM(config).eval()
ids = torch.randint(0, 128, (2, 16))
with torch.no_grad():
    eager = model(ids, use_cache=False).logits
    logits = torch.compile(model, fullgraph=True)(ids, use_cache=False).logits
torch.testing.assert_close(logits, eager, rtol=1e-4, atol=1e-4)
report = {
    "digest": hashlib.sha256(logits.numpy().tobytes()).hexdigest()[:16],
    "fxgraph_hits": counters["inductor"]["fxgraph_cache_hit"],
    "fxgraph_misses": counters["inductor"]["fxgraph_cache_miss"],
}
if os.environ.get("TUNED_KERNELS") == "1":
    import tuned_kernels

    report["graphs"] = tuned_kernels.stats()["graphs"]
print("LLAMA " + json.dumps(report))
