"""ImplementationChoice: the op dispatches to the implementation the installed resolver chose for its key,
asking once per key (the hot path is a dict look-up), as Triton's autotuner asks once per key."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from tuned_kernels import model, resolving
from tuned_kernels.choice import ImplementationChoice
from tuned_kernels.decision import Decision
from tuned_kernels.resolving import Resolved


def signature(x: torch.Tensor, n: int) -> None: ...


class Recording:
    """A resolver that picks the implementation named in `picks` by key, and records what it was asked."""

    def __init__(self, picks: dict[model.TuningKey, str]) -> None:
        self.picks = picks
        self.asked: list[model.TuningKey] = []

    def resolve(self, identity: model.KernelIdentity, key: model.TuningKey, own: Mapping[model.Config, Any],
                measure: Callable[[Sequence[Any]], Mapping[Any, float]], *_: Any) -> Resolved[Any]:  # fmt: skip
        self.asked.append(key)
        return Resolved(
            next(v for c, v in own.items() if dict(c.kwargs)["IMPL"] == self.picks[key]), Decision("hit")
        )

    def refuse(self, *_: Any) -> None: ...

    def warn(self, message: str) -> None: ...


def test_each_key_is_decided_once_and_served_from_then_on() -> None:
    calls: list[str] = []
    choice = ImplementationChoice(
        signature, {"a": lambda x, n: calls.append("a"), "b": lambda x, n: calls.append("b")}, ["n"]
    )
    resolver = Recording({(8, "torch.float32"): "b", (8, "torch.float16"): "a", (9, "torch.float32"): "a"})
    with resolving.installed(resolver):
        for _ in range(50):
            choice(torch.zeros(2), 8)
        choice(torch.zeros(2, dtype=torch.float16), 8)
        choice(torch.zeros(2), 9)
    assert resolver.asked == [(8, "torch.float32"), (8, "torch.float16"), (9, "torch.float32")]
    assert calls == ["b"] * 50 + ["a", "a"]


def test_with_nothing_installed_the_default_runs() -> None:
    calls: list[str] = []
    choice = ImplementationChoice(
        signature, {"a": lambda x, n: calls.append("a"), "b": lambda x, n: calls.append("b")}, ["n"]
    )
    with resolving.installed(None):
        choice(torch.zeros(2), 8)
    assert calls == ["a"]
