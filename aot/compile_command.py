"""`tuned-kernels compile RESULTS --target ARCH -o OUT`: fills in the compiled kernels of a results file on
any machine, GPU or not, so GPU runners spend their time benchmarking only, and one set of results can be
compiled for a sibling target (sm90 and sm90a share a compiler target).

Each entry's launch is rebuilt from the corpus case that produces its key (inputs made on the CPU, as the
op would pass them), then compiled through Triton's own `warmup` for the target: the specialization
(pointer alignment, divisibility of sizes and strides) is what the run-time launch will ask for.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from tuned_kernels.aot.corpus import Corpus, KernelFamily
from tuned_kernels.hardware import compiler_fingerprint, target_for_arch
from tuned_kernels.hardware.archs import triton_target_of

from tuned_kernels import model
from tuned_kernels.errors import TunedKernelsError
from tuned_kernels.matching import compiler_mismatch
from tuned_kernels.triton_edge import compiler_facts
from tuned_kernels.triton_edge.compile import artifact_of, compiling_for, is_compiled_kernel, warmup
from tuned_kernels.triton_edge.keys import jit_function, kernel_identity, tuning_key
from tuned_kernels.triton_edge.launch import LaunchesAnother, probe_launch


class CompileError(TunedKernelsError):
    pass


@dataclass
class CompileReport:
    compiled: int = 0
    kept: int = 0  # entries that already had an artifact for this target
    skipped: list[str] = field(default_factory=list)  # why an entry got none
    bytes: int = 0


def compile_results(
    results: model.Results, arch: str, corpus: Corpus, shape_sets: tuple[str, ...] = ("quick", "full")
) -> tuple[model.Results, CompileReport]:
    """`results` with every entry's winner compiled for `arch` (a sibling of the results' own target)."""
    target = _output_target(results.header.target, arch)
    compiler = compiler_fingerprint(target)
    reason = compiler_mismatch(results.header.compiler, compiler, "this machine with")
    if reason:
        raise CompileError(f"the results were {reason}: kernels compiled here would never be used")
    gpu_target = compiler_facts.gpu_target(*triton_target_of(arch))
    gpu_name = f"{gpu_target.backend}:{gpu_target.arch}:{gpu_target.warp_size}"
    report = CompileReport()
    blobs = dict(results.blobs)
    entries = []
    with compiling_for(gpu_target):
        launches = corpus_launches(corpus, shape_sets)  # the kernels ops launch on the target
        for entry in results.entries:
            if any(a.gpu_target == gpu_name and a.config == entry.best for a in entry.artifacts):
                report.kept += 1
                entries.append(entry)
                continue
            launch = launches.get(entry.slot)
            if launch is None:
                report.skipped.append(f"{entry.kernel.name} {entry.key}: no corpus kernel launches this key")
                entries.append(entry)
                continue
            family, named = launch
            try:
                compiled = warmup(family.kernel, named, entry.best)
            except Exception as exc:  # one kernel that does not compile must not lose the others
                report.skipped.append(f"{entry.kernel.name} {entry.key}: {type(exc).__name__}: {exc}")
                entries.append(entry)
                continue
            artifact, new_blobs = artifact_of(compiled, entry.best)
            blobs.update(new_blobs)
            report.compiled += 1
            report.bytes += artifact.size_bytes
            entries.append(dataclasses.replace(entry, artifacts=(*entry.artifacts, artifact)))
    header = dataclasses.replace(results.header, target=target, compiler=compiler)
    out = tuple(entries)
    return model.Results(header, out, model.referenced_blobs(out, blobs)), report


def _output_target(tuned_for: model.Target, arch: str) -> model.Target:
    """The results' own target, or a sibling that shares its compiler target (configs carry over)."""
    if arch == tuned_for.arch:
        return tuned_for
    requested = target_for_arch(arch)
    if tuned_for.arch == "cpu" or triton_target_of(requested.arch) != triton_target_of(tuned_for.arch):
        raise CompileError(
            f"the results were tuned for {tuned_for.arch}; their configs do not carry over to {arch} "
            f"(compile for {tuned_for.arch} or a sibling that shares its compiler target)"
        )
    return requested


def corpus_launches(
    corpus: Corpus, shape_sets: tuple[str, ...]
) -> dict[model.EntrySlot, tuple[KernelFamily, Any]]:
    """Every (kernel, key) the corpus can launch, with the named arguments its op passes the kernel (on the
    GPU Triton compiles for: inside `compiling_for`, the target's)."""
    found: dict[model.EntrySlot, tuple[KernelFamily, Any]] = {}
    for family in corpus:
        if not is_compiled_kernel(family.kernel):
            _require_compilable(family)
            continue  # an implementation choice, or kernels loaded for the interpreter (refused above)
        identity = kernel_identity(family.kernel)
        for shape_set in shape_sets:
            for case in family.shapes.get(shape_set, ()):
                try:
                    named = _named_args(family, case)
                except LaunchesAnother:
                    continue  # the op runs another family's kernel for this case there
                slot = model.slot_of(identity, tuning_key(family.kernel, named))
                found.setdefault(slot, (family, named))
    return found


def _named_args(family: KernelFamily, case: Any) -> dict[str, Any]:
    inputs = _shape_only_inputs(family, case)
    return probe_launch(family.kernel, lambda: family.run(inputs))


def _shape_only_inputs(family: KernelFamily, case: Any) -> Any:
    """Inputs with the shapes, dtypes and strides of the case: on torch's `meta` device where the family
    supports it (no memory, no time: a compile needs no values), else small CPU tensors."""
    import torch

    try:
        return family.make_inputs(case, "meta", torch.Generator().manual_seed(0))
    except Exception:
        return family.make_inputs(case, "cpu", torch.Generator().manual_seed(0))


def _require_compilable(family: KernelFamily) -> None:
    """Refuses kernels loaded for Triton's interpreter; anything else that is not a kernel is skipped."""
    if type(jit_function(family.kernel)).__name__ == "InterpretedFunction":
        raise CompileError(
            "kernels were loaded for Triton's interpreter (TRITON_INTERPRET is set); unset it to compile"
        )
