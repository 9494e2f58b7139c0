"""Writes a results file for a GPU target without a GPU: every quick case of the built-in corpus, each with
the first config of its space as "best". What `tuned-kernels compile` needs as input, made on a CPU.

Usage: python tests/corpora/untuned_results.py ARCH OUTPUT (with TRITON_INTERPRET unset).
"""

import sys

from tuned_kernels.aot.compile_command import corpus_launches
from tuned_kernels.aot.kernels.builtin import CORPUS
from tuned_kernels.hardware import compiler_fingerprint, target_for_arch
from tuned_kernels.hardware.archs import triton_target_of

from tuned_kernels import model
from tuned_kernels.results import write_results
from tuned_kernels.triton_edge import compiler_facts
from tuned_kernels.triton_edge.compile import compiling_for
from tuned_kernels.triton_edge.keys import config_from_triton, kernel_identity
from tuned_kernels.triton_edge.launch import config_space


def main(arch: str, output: str) -> None:
    target = target_for_arch(arch)
    entries = []
    with compiling_for(compiler_facts.gpu_target(*triton_target_of(arch))):  # the kernels launched there
        launches = corpus_launches(CORPUS, ("quick",))
    for (_, _, key), (family, named) in launches.items():
        best = config_from_triton(config_space(family.kernel, named)[0])
        entries.append(model.Entry(kernel_identity(family.kernel), key, best, (model.Timing(best, 1.0),)))
    header = model.Header(
        target, compiler_fingerprint(target), model.Producer.TUNE, "test", "2026-11-22T00:00:00Z"
    )
    write_results(output, model.Results(header, tuple(sorted(entries, key=model.entry_sort_key))))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
