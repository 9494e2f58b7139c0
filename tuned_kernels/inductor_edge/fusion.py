"""Which fusions a served GEMM template takes: the ones its captured twin took.

With max-autotune a GEMM whose choices Inductor times is a `MultiTemplateBuffer`, and the scheduler benchmarks
each fusion into it (a pointwise epilogue after it, a prologue before it) before taking it. A served GEMM has
one choice, a plain Triton template, and the scheduler fuses whatever its heuristics allow: the served graph
could then generate kernels the capture never made (a SwiGLU's `silu(gate) * up` fused as a prologue into
the down projection), slower, with no tuned configs in the bundle for them.

So capture records, for each GEMM occurrence that Inductor timed and that ended on a Triton template, whether
an epilogue and a prologue were fused into it: an entry `inductor.<op>.fusion` at the GEMM's occurrence key,
config `epilogue=... prologue=...`. Serving lets into a served template only the kinds of fusion its capture
took. A GEMM with no such entry: Inductor decides, as without tuned-kernels. Like a GEMM's final choice, the
record is keyed by the GEMM's key and its occurrence in the graph, so another program's GEMM of that key at
that place is held to it too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tuned_kernels import model, resolving
from tuned_kernels.decision import Decision, Measured
from tuned_kernels.inductor_edge.keys import FUSION


@dataclass(frozen=True)
class Fused:
    epilogue: bool
    prologue: bool


@dataclass(frozen=True)
class Gemm:
    """One GEMM of a graph: its op's identity (`inductor.mm`) and its key at its occurrence."""

    identity: model.KernelIdentity
    occurrence_key: model.TuningKey


GemmOf = Callable[[Any], Gemm | None]  # a template buffer's GEMM, where the Inductor edge knows it


def identity_for(gemm: model.KernelIdentity) -> model.KernelIdentity:
    return model.KernelIdentity(f"{gemm.name}{FUSION}", gemm.source_hash)


def config_of(fused: Fused) -> model.Config:
    return model.Config.of({"epilogue": fused.epilogue, "prologue": fused.prologue})


_CONFIGS = {config_of(Fused(e, p)): Fused(e, p) for e in (False, True) for p in (False, True)}


def fits(config: model.Config) -> bool:
    """A stored fusion config is one of the four there are (a bundle's other values are refused)."""
    return config in _CONFIGS


def fused_in(node: Any) -> Fused | None:
    """What a scheduler node fused into its template: nodes before it (a prologue), after it (an epilogue)."""
    parts = list(node.get_nodes())
    at = [i for i, part in enumerate(parts) if part.is_template()]
    if len(at) != 1:
        return None
    return Fused(epilogue=at[0] < len(parts) - 1, prologue=at[0] > 0)


def record_timed(resolver: resolving.Resolver, nodes: Iterable[Any], timed_gemm_of: GemmOf) -> None:
    """After the scheduler's fusion: the fusions taken by each GEMM whose choices Inductor timed (those it
    benchmarked with and without fusions) are remembered, as its chosen GEMM config is."""
    for node in nodes:
        template = node.get_template_node()
        gemm = timed_gemm_of(template) if template is not None else None
        fused = fused_in(node) if gemm is not None else None
        if gemm is not None and fused is not None:
            identity = identity_for(gemm.identity)
            resolver.record(
                Measured(identity, gemm.occurrence_key, Decision("miss"), {}, chosen=config_of(fused))
            )


ANNOTATION = "tuned_kernels.fusion"  # a served template buffer's looked-up fusions, kept on the buffer


def allows(resolver: resolving.Resolver, producer: Any, consumer: Any, served_gemm_of: GemmOf) -> bool:
    """Whether the scheduler may fuse `consumer` into `producer` (Inductor's `can_fuse_vertical`): not an
    epilogue into a served template, nor a prologue, that its capture did not fuse."""
    if producer.is_template():
        fused = _captured(resolver, producer.get_template_node(), served_gemm_of)
        return fused is None or fused.epilogue
    if consumer.is_template():
        fused = _captured(resolver, consumer.get_template_node(), served_gemm_of)
        return fused is None or fused.prologue
    return True


def _captured(resolver: resolving.Resolver, template: Any, served_gemm_of: GemmOf) -> Fused | None:
    """The fusions a served template's capture took (None: no record, or not a served template), looked up
    once per template buffer (the scheduler asks for every pair of nodes it considers)."""
    annotations = getattr(template, "annotations", {})
    if ANNOTATION not in annotations:
        gemm = served_gemm_of(template) if template is not None else None
        fused = None
        if gemm is not None:
            decision = resolver.decide(identity_for(gemm.identity), gemm.occurrence_key, fits, counted=False)
            fused = _CONFIGS[decision.configs[0]] if decision.served else None
        annotations[ANNOTATION] = fused
    return annotations[ANNOTATION]  # type: ignore[no-any-return]
