"""ImplementationChoice: the op dispatches to the implementation the installed resolver chose for its key,
asking once per key (the hot path is a dict look-up), as Triton's autotuner asks once per key."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import torch
import triton

from tuned_kernels import model, resolving
from tuned_kernels.choice import ImplementationChoice
from tuned_kernels.decision import Decision
from tuned_kernels.triton_edge.keys import config_from_triton


def signature(x: torch.Tensor, n: int) -> None: ...


class Recording:
    """A resolver that picks the implementation named in `picks` by key, and records what it was asked."""

    def __init__(self, picks: dict[model.TuningKey, str]) -> None:
        self.picks = picks
        self.asked: list[model.TuningKey] = []

    def decide(self, identity: model.KernelIdentity, key: model.TuningKey,
               fits: Callable[[model.Config], bool], counted: bool = True) -> Decision:  # fmt: skip
        self.asked.append(key)
        picked = config_from_triton(triton.Config({"IMPL": self.picks[key]}))
        assert fits(picked)
        return Decision("hit", (picked,))

    def record(self, *_: Any) -> None: ...

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


def test_implementations_are_compared_with_their_launches_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel fast on the device but slow to launch (a Python launcher) loses to a library call slower on
    the device that launches at once: a program calling the op in a loop runs at the pace of the slower."""
    from tuned_kernels.triton_edge.benchmarker import LaunchInclusiveBenchmarker

    now = [0.0]  # the host's clock, in seconds: each call advances it by its launch

    def slow_to_launch() -> None:
        now[0] += 0.002

    def launches_at_once() -> None:
        now[0] += 0.000001

    device_ms = {slow_to_launch: 0.010, launches_at_once: 0.015}
    bench = LaunchInclusiveBenchmarker(device_ms.__getitem__, calls=3, batches=3, synchronize=lambda: None)
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])
    timings = {fn: bench(fn) for fn in device_ms}
    assert timings[launches_at_once] == 0.015  # its device time: the host issues it sooner
    assert timings[slow_to_launch] == pytest.approx(2.0)  # its launch, not its 0.010 ms on the device
    assert min(timings, key=timings.__getitem__) is launches_at_once


def test_only_device_timings_gain_the_launch_a_wall_clock_already_counts() -> None:
    from tuned_kernels.triton_edge.benchmarker import (
        DeviceBenchmarker,
        LaunchInclusiveBenchmarker,
        WallClockBenchmarker,
        launch_inclusive,
    )

    wall = WallClockBenchmarker()
    assert launch_inclusive(wall) is wall
    assert isinstance(launch_inclusive(DeviceBenchmarker()), LaunchInclusiveBenchmarker)


def test_a_caller_can_ask_for_the_decided_implementation_before_making_its_output() -> None:
    a, b = (lambda x, n: "a"), (lambda x, n: "b")
    choice = ImplementationChoice(signature, {"a": a, "b": b}, ["n"])
    with resolving.installed(Recording({(8, "torch.float16"): "b"})):
        assert choice.known(torch.zeros(2, dtype=torch.float16), 8) is None
        choice(torch.zeros(3, dtype=torch.float16), 8)
        # only the key and the dtypes count: a stand-in tensor of the same dtype finds the decision
        assert choice.known(torch.empty(0, dtype=torch.float16), 8) is b
        assert choice.known(torch.zeros(2), 8) is None


def test_ops_matmul_on_a_key_decided_for_torch_matches_and_fills_the_given_output() -> None:
    from tuned_kernels.kernels import matmul

    a, b = torch.randn(16, 64).half(), torch.randn(64, 32).half()
    with resolving.installed(Recording({(16, 32, 64, *["torch.float16"] * 3): "torch"})):
        made = matmul.matmul(a, b)  # decided here
        out = torch.empty(16, 32, dtype=torch.float16)
        given = matmul.matmul(a, b, out=out)  # from the decision
    assert given is out and torch.equal(made, torch.matmul(a, b)) and torch.equal(out, made)
