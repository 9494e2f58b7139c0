"""A Hugging Face transformers model nobody here wrote, built small from its config (no download), run
eagerly and under torch.compile as its users write it: `python hf_frames_app.py ARCH STYLE [DEVICE [MODE]]`
(DEVICE cpu or cuda, MODE a torch.compile mode). Checks the compiled outputs against eager PyTorch and prints
`RESULT {...}`: a digest of them, the seconds of the first compiled call, Dynamo's graphs, Inductor's graph
look-ups and the autotuning Inductor really ran in this process, and, where tuned-kernels serves, what it
says of the frames and graphs."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
import transformers as hf
from inductor_model import RealWork
from torch._dynamo.utils import counters

LM = {
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
}
IMAGE = {"image": True}  # takes a batch of 32x32 images, not token ids
# name: (model class, config class, config, what the model takes besides its input)
MODELS: dict[str, tuple[str, str, dict[str, Any], dict[str, Any]]] = {
    "gpt2": (
        "GPT2LMHeadModel",
        "GPT2Config",
        {"vocab_size": 128, "n_embd": 64, "n_layer": 2, "n_head": 4},
        {},
    ),
    "llama": ("LlamaForCausalLM", "LlamaConfig", {**LM, "num_key_value_heads": 2}, {}),
    "mistral": ("MistralForCausalLM", "MistralConfig", {**LM, "num_key_value_heads": 2}, {}),
    "qwen2": ("Qwen2ForCausalLM", "Qwen2Config", {**LM, "num_key_value_heads": 2}, {}),
    "gemma": ("GemmaForCausalLM", "GemmaConfig", {**LM, "num_key_value_heads": 2, "head_dim": 16}, {}),
    "phi3": ("Phi3ForCausalLM", "Phi3Config", {**LM, "num_key_value_heads": 2, "pad_token_id": 0}, {}),
    "gpt_neox": ("GPTNeoXForCausalLM", "GPTNeoXConfig", LM, {}),
    "bloom": (
        "BloomForCausalLM",
        "BloomConfig",
        {"vocab_size": 128, "hidden_size": 64, "n_layer": 2, "n_head": 4},
        {},
    ),
    "opt": (
        "OPTForCausalLM",
        "OPTConfig",
        {**LM, "ffn_dim": 128, "word_embed_proj_dim": 64},
        {},
    ),
    "mixtral": (
        "MixtralForCausalLM",
        "MixtralConfig",
        {**LM, "num_key_value_heads": 2, "num_local_experts": 4, "num_experts_per_tok": 2},
        {},
    ),
    "qwen2_moe": (
        "Qwen2MoeForCausalLM",
        "Qwen2MoeConfig",
        {
            **LM,
            "num_key_value_heads": 2,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 64,
        },
        {},
    ),
    "mamba": (
        "MambaForCausalLM",
        "MambaConfig",
        {"vocab_size": 128, "hidden_size": 64, "state_size": 8, "num_hidden_layers": 2},
        {},
    ),
    "bert": ("BertModel", "BertConfig", {**LM, "intermediate_size": 128}, {"no_cache": True}),
    "roberta": ("RobertaModel", "RobertaConfig", {**LM, "pad_token_id": 1}, {"no_cache": True}),
    "t5": (
        "T5ForConditionalGeneration",
        "T5Config",
        {"vocab_size": 128, "d_model": 64, "d_kv": 16, "d_ff": 128, "num_layers": 2, "num_heads": 4},
        {"decoder": True},
    ),
    "bart": (
        "BartForConditionalGeneration",
        "BartConfig",
        {
            "vocab_size": 128,
            "d_model": 64,
            "encoder_layers": 2,
            "decoder_layers": 2,
            "encoder_attention_heads": 4,
            "decoder_attention_heads": 4,
            "encoder_ffn_dim": 128,
            "decoder_ffn_dim": 128,
            "max_position_embeddings": 64,
        },
        {},
    ),
    "vit": (
        "ViTModel",
        "ViTConfig",
        {
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "intermediate_size": 128,
            "image_size": 32,
            "patch_size": 8,
        },
        IMAGE,
    ),
    "resnet": (
        "ResNetModel",
        "ResNetConfig",
        {"embedding_size": 16, "hidden_sizes": [16, 32], "depths": [1, 1], "layer_type": "basic"},
        IMAGE,
    ),
    "convnext": (
        "ConvNextModel",
        "ConvNextConfig",
        {"hidden_sizes": [16, 32], "depths": [1, 1], "num_stages": 2},
        IMAGE,
    ),
}
STYLES = ("compile", "fullgraph", "module-compile", "decorated", "two-lengths", "graph-break", "train")


def output(result: Any) -> torch.Tensor:
    for name in ("logits", "last_hidden_state"):
        if getattr(result, name, None) is not None:
            return getattr(result, name)
    return result[0]


def main(arch: str, style: str, device: str, mode: str | None) -> dict[str, Any]:
    model_class, config_class, config, takes = MODELS[arch]
    torch.manual_seed(0)
    model = getattr(hf, model_class)(getattr(hf, config_class)(**config)).eval().to(device)
    image = takes.get("image", False)
    x = (torch.randn(2, 3, 32, 32) if image else torch.randint(0, 128, (2, 16))).to(device)
    extra: dict[str, Any] = {} if image or takes.get("no_cache") else {"use_cache": False}
    if takes.get("decoder"):
        extra["decoder_input_ids"] = x
    clock = FirstCall(device)

    def run(fn: Callable[..., Any], inputs: torch.Tensor) -> torch.Tensor:
        return output(fn(inputs, **extra))

    def compile(fn: Any, **how: Any) -> Any:
        return torch.compile(fn, mode=mode, **how)

    if style == "train":
        return _train(model, x, extra, compile(model), clock)
    with torch.no_grad():
        eager = run(model, x)
        if style == "compile":
            compiled = clock.time(run, compile(model), x)
        elif style == "fullgraph":
            compiled = clock.time(run, compile(model, fullgraph=True), x)
        elif style == "module-compile":
            model.compile(mode=mode)
            compiled = clock.time(run, model, x)
        elif style == "decorated":

            @compile
            def probabilities(inputs: torch.Tensor) -> torch.Tensor:
                return run(model, inputs).float().softmax(-1)

            eager, compiled = eager.float().softmax(-1), clock.time(probabilities, x)
        elif style == "graph-break":

            @compile
            def logged(inputs: torch.Tensor) -> torch.Tensor:
                hidden = run(model, inputs)
                print("between the model and its softmax", file=sys.stderr)
                return hidden.float().softmax(-1)

            eager, compiled = eager.float().softmax(-1), clock.time(logged, x)
        elif style == "two-lengths":  # a second length: Dynamo compiles again, for a dynamic length
            once = compile(model)
            torch.testing.assert_close(clock.time(run, once, x), eager, **close(device))
            longer = torch.randint(0, 128, (2, 24)).to(device)
            eager, compiled = run(model, longer), run(once, longer)
        else:
            raise SystemExit(f"unknown style {style}: one of {', '.join(STYLES)}")
    torch.testing.assert_close(compiled, eager, **close(device))
    return {"digest": digest(compiled), "first_call_s": clock.seconds, "first_result_at": clock.at}


def close(device: str) -> dict[str, float]:
    """How close the compiled result must be to eager's. On a GPU, float32 convolutions run in TF32 by
    default (torch.backends.cudnn.allow_tf32: 10 mantissa bits), eager's and Inductor's choice of algorithm
    alike, so the vision models' results differ by about 1e-3 there."""
    loose = device == "cuda" and torch.backends.cudnn.allow_tf32
    return {"rtol": 1e-2, "atol": 1e-2} if loose else {"rtol": 1e-4, "atol": 1e-4}


class FirstCall:
    """The seconds of the first compiled call, to its result on the device."""

    def __init__(self, device: str) -> None:
        self.device, self.seconds, self.at = device, 0.0, 0.0

    def time(self, fn: Callable[..., Any], *args: Any) -> Any:
        started = time.perf_counter()
        result = fn(*args)
        if self.device == "cuda":
            torch.cuda.synchronize()
        self.seconds = round(time.perf_counter() - started, 3)
        self.at = time.time()  # the wall clock: another process's start set beside it
        return result


def digest(t: torch.Tensor) -> str:
    return hashlib.sha256(t.detach().cpu().numpy().tobytes()).hexdigest()[:16]


def _train(
    model: Any, ids: torch.Tensor, extra: dict[str, Any], compiled: Any, clock: FirstCall
) -> dict[str, Any]:
    """Two steps of training (forward with the loss, backward, SGD) through the compiled model, the first
    one timed."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()

    def step() -> torch.Tensor:
        loss = compiled(ids, labels=ids, **extra).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss  # type: ignore[no-any-return]

    clock.time(step)
    return {"digest": digest(step()), "first_call_s": clock.seconds, "first_result_at": clock.at}


if __name__ == "__main__":
    device = sys.argv[3] if len(sys.argv) > 3 else "cpu"
    real = RealWork()  # counted from before the first compiled call
    report = main(sys.argv[1], sys.argv[2], device, sys.argv[4] if len(sys.argv) > 4 else None)
    report |= real.counts
    report |= {
        "graphs_traced": counters["stats"]["unique_graphs"],
        "fxgraph_hits": counters["inductor"]["fxgraph_cache_hit"],
        "fxgraph_misses": counters["inductor"]["fxgraph_cache_miss"],
    }
    if os.environ.get("TUNED_KERNELS") == "1":
        import tuned_kernels

        graphs = tuned_kernels.stats()["graphs"]
        report |= {k: graphs[k] for k in ("frames_served", "frames_traced", "objects_compiled")}
    print("RESULT " + json.dumps(report))
