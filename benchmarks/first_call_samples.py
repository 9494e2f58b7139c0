"""Where a first call's wall-clock time went, from the stacks `tests/corpora/inductor_model.py` samples every
millisecond (INDUCTOR_MODEL_SAMPLES; `benchmarks/run.py --graph-samples DIR` has each run write them):

  python benchmarks/first_call_samples.py FILE.folded [...] [--top N] [--under FUNCTION]

For each file: the sampled time in all, split by the part of torch or of this project whose code ran (the
innermost frame of a part names the sample's part: Inductor's code called from Dynamo's counts as
Inductor's), the modules imported during the call with the most time (each import counted at the outermost
module body run, with the nearest code outside the import machinery that asked for it), and the N functions
with the most time under them. `--under F` counts only the samples whose
stack passes through a function named F (file:name or name).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

PARTS = (  # (name, where its frames' files are), the first that matches a frame names its part
    ("imports", "<frozen importlib"),
    ("tuned-kernels", "tuned_kernels/"),
    ("dynamo", "torch/_dynamo/"),
    ("aot-autograd", "torch/_functorch/"),
    ("inductor", "torch/_inductor/"),
    ("triton", "triton/"),
    ("fx", "torch/fx/"),
)


def read(path: Path) -> list[tuple[list[str], int]]:
    """The file's stacks, outermost frame first, with the microseconds each was seen for."""
    stacks = []
    for line in path.read_text().splitlines():
        stack, _, micros = line.rpartition(" ")
        if stack and micros.isdigit():
            stacks.append((stack.split(";"), int(micros)))
    return stacks


def passes_through(frames: list[str], function: str) -> bool:
    return any(f == function or f.rpartition(":")[2] == function for f in frames)


def imports(stacks: list[tuple[list[str], int]]) -> Counter[str]:
    """Time by the outermost module body run below the program's own (an import during the call), named with
    the nearest frame outside the import machinery that led to it."""
    found: Counter[str] = Counter()
    for frames, micros in stacks:
        bodies = [i for i, frame in enumerate(frames) if i > 1 and frame.endswith(":<module>")]
        if bodies:
            first = bodies[0]
            asking = [f for f in frames[:first] if "importlib" not in f]
            found[f"{frames[first]} <- {asking[-1] if asking else '?'}"] += micros
    return found


def part_of(frames: list[str]) -> str:
    """The part of the innermost frame that belongs to one (else "other")."""
    for frame in reversed(frames):
        for name, where in PARTS:
            if where in frame:
                return name
    return "other"


def readout(stacks: list[tuple[list[str], int]], top: int) -> list[str]:
    total = sum(micros for _, micros in stacks)
    parts: Counter[str] = Counter()
    functions: Counter[str] = Counter()
    for frames, micros in stacks:
        parts[part_of(frames)] += micros
        for frame in set(frames):
            functions[frame] += micros
    lines = [f"  sampled {total / 1e3:.0f} ms"]
    lines += [
        f"  {name:<14} {micros / 1e3:8.0f} ms  {micros / total:5.1%}" for name, micros in parts.most_common()
    ]
    lines.append("  the imports with the most time (module run <- what imported it):")
    lines += [f"  {micros / 1e3:8.0f} ms  {name}" for name, micros in imports(stacks).most_common(8)]
    lines.append(f"  the {top} functions with the most time under them:")
    lines += [f"  {micros / 1e3:8.0f} ms  {frame}" for frame, micros in functions.most_common(top)]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--under", default=None, help="only samples whose stack passes through it")
    args = parser.parse_args()
    for path in args.files:
        stacks = read(path)
        if args.under:
            stacks = [(frames, micros) for frames, micros in stacks if passes_through(frames, args.under)]
        print(path.name)
        print("\n".join(readout(stacks, args.top)) if stacks else "  no samples")


if __name__ == "__main__":
    main()
