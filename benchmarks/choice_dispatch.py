"""Per-call cost of an ImplementationChoice on a hit (goal: at most ~2 us), beside the bare call of the
implementation, on this machine's CPU: `python benchmarks/choice_dispatch.py`."""

from __future__ import annotations

import time

import torch

from tuned_kernels.choice import ImplementationChoice


def signature(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int) -> None: ...


def noop(*args: object) -> None:
    return None


def per_call_us(fn: object, args: tuple[object, ...], calls: int = 200_000) -> float:
    for _ in range(1000):
        fn(*args)  # type: ignore[operator]
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*args)  # type: ignore[operator]
    return (time.perf_counter() - t0) / calls * 1e6


def main() -> None:
    choice = ImplementationChoice(signature, {"triton": noop, "torch": noop}, key=["M", "N", "K"])
    a, b, c = (torch.empty(16, 64, dtype=torch.float16) for _ in range(3))
    args = (a, b, c, 16, 64, 64)
    through, bare = per_call_us(choice, args), per_call_us(noop, args)
    print(
        f"dispatch {through - bare:.2f} us per call (through the choice {through:.2f} us, bare {bare:.2f} us)"
    )


if __name__ == "__main__":
    main()
