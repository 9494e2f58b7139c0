"""Renders results for people (a table) and for programs (JSON). Pure."""

from __future__ import annotations

from typing import Any

from tuned_kernels import model
from tuned_kernels.errors import BundleError, printable
from tuned_kernels.inductor_edge import keys as inductor_keys
from tuned_kernels.inductor_edge.graphs import KIND, triton_kernels
from tuned_kernels.inductor_edge.graphs import NAME as GRAPH_KERNEL
from tuned_kernels.inductor_edge.source_key import NAME as TORCH_KEY
from tuned_kernels.naming import distribution_name

GRAPH_SIDE = (GRAPH_KERNEL, TORCH_KEY)  # entries that go with a bundle's compiled graphs: no tuning decisions


def format_key(key: model.TuningKey) -> str:
    return "(" + ", ".join(str(v) for v in key) + ")"


def results_summary(results: model.Results) -> dict[str, Any]:
    h = results.header
    return {
        "schema_version": h.schema_version,
        "producer": h.producer.value,
        "created_at": h.created_at,
        "tool_version": h.tool_version,
        "target": {"vendor": h.target.vendor, "arch": h.target.arch, "device_name": h.target.device_name},
        "bundle_name": _bundle_name(h.target.arch),
        "compiler": {
            "triton_version": h.compiler.triton_version,
            "triton_hash": h.compiler.triton_hash,
            "backend_versions": dict(h.compiler.backend_versions),
            "torch_version": h.compiler.torch_version,
        },
        "entries": [
            {
                "kernel": e.kernel.name,
                "source_hash": e.kernel.source_hash,
                "identity_scheme": e.kernel.scheme.value,
                "key": list(e.key),
                "best": {
                    **dict(e.best.kwargs),
                    "num_warps": e.best.num_warps,
                    "num_stages": e.best.num_stages,
                    "num_ctas": e.best.num_ctas,
                    "maxnreg": e.best.maxnreg,
                },
                "best_time_ms": None if e.best_time_ms == float("inf") else e.best_time_ms,
                "found_by": e.found_by.value,
                "configs_benchmarked": e.configs_benchmarked,
                "rejected": [{"config": r.config.describe(), "reason": r.reason} for r in e.rejected],
                "artifacts": [
                    {
                        "cache_key": a.cache_key,
                        "gpu_target": a.gpu_target,
                        "config": a.config.describe(),
                        "files": [
                            {"name": f.name, "sha256": f.sha256, "size_bytes": f.size_bytes} for f in a.files
                        ],
                    }
                    for a in e.artifacts
                ],
            }
            for e in results.entries
        ],
        "bytes_per_kernel": artifact_bytes_per_kernel(results),
        "graph_files": {k: {"files": n, "bytes": b} for k, (n, b) in graph_files(results).items()},
        "graph_triton_kernels": dict(zip(("shipped", "launched"), graph_kernels(results), strict=True)),
        "blob_bytes": sum(len(b) for b in results.blobs.values()),
    }


GRAPH_KINDS = {
    "frame": "Dynamo frame",
    "fxgraph": "FX-graph entr",
    "aotautograd": "AOTAutograd entr",
    "cpp": "C++ object",
}


def graph_files(results: model.Results) -> dict[str, tuple[int, int]]:
    """The compiled torch.compile graphs a file holds: per kind of Inductor cache file, (files, bytes)."""
    held: dict[str, tuple[int, int]] = {}
    for e in results.entries:
        if e.kernel.name == GRAPH_KERNEL:
            kind = str(dict(e.best.kwargs).get(KIND, "?"))
            files, size = held.get(kind, (0, 0))
            held[kind] = (files + 1, size + sum(a.size_bytes for a in e.artifacts))
    return held


def graph_kernels(results: model.Results) -> tuple[int, int]:
    """The Triton kernels a file's FX-graph entries ship compiled and those their generated code defines
    (what a served graph launches), summed over the entries."""
    shipped = defined = 0
    for e in results.entries:
        if e.kernel.name == GRAPH_KERNEL and dict(e.best.kwargs).get(KIND) == "fxgraph":
            data = results.blobs.get(e.artifacts[0].files[0].sha256) if e.artifacts else None
            if data is not None:
                entry_shipped, entry_defined = triton_kernels(data)
                shipped, defined = shipped + entry_shipped, defined + entry_defined
    return shipped, defined


def describe_graphs(held: dict[str, tuple[int, int]]) -> str:
    """`2 FX-graph entries, 1 AOTAutograd entry, 9 C++ objects; 944 KiB`."""
    parts = [_counted(held[k][0], GRAPH_KINDS.get(k, k)) for k in sorted(held, key=list(GRAPH_KINDS).index)]
    return f"{', '.join(parts)}; {sum(size for _, size in held.values()) // 1024} KiB"


def _counted(n: int, stem: str) -> str:
    if stem.endswith("entr"):
        return f"{n} {stem}{'y' if n == 1 else 'ies'}"
    return f"{n} {stem}{'' if n == 1 else 's'}"


def artifact_bytes_per_kernel(results: model.Results) -> dict[str, int]:
    """Compiled-kernel bytes each kernel adds to a bundle (a file shared by entries counted once; the
    compiled graphs' files are counted by `graph_files`)."""
    seen: set[str] = set()
    sizes: dict[str, int] = {}
    for e in (e for e in results.entries if e.kernel.name != GRAPH_KERNEL):
        for f in (f for a in e.artifacts for f in a.files):
            if f.sha256 not in seen:
                seen.add(f.sha256)
                sizes[e.kernel.name] = sizes.get(e.kernel.name, 0) + f.size_bytes
    return sizes


def results_table(results: model.Results) -> str:
    h = results.header
    device = h.target.device_name or "generic"
    target = device if device.startswith(f"{h.target.arch} ") else f"{h.target.arch} ({device})"
    tuned = [e for e in results.entries if e.kernel.name not in GRAPH_SIDE]
    lines = [
        f"target    {target} -> {_bundle_name(h.target.arch)}",
        f"compiler  {h.compiler.describe()}, triton hash {h.compiler.triton_hash[:12]}",
        f"producer  {h.producer.value} by tuned-kernels {h.tool_version} at {h.created_at}",
        f"entries   {len(tuned)} across {len({e.kernel.name for e in tuned})} kernels",
        f"identity  {_schemes(results)}",
        "",
    ]
    sizes = artifact_bytes_per_kernel(results)
    if sizes:
        compiled = sum(len(e.artifacts) for e in results.entries if e.kernel.name != GRAPH_KERNEL)
        lines[-1:-1] = [
            f"compiled  {compiled} kernels, {sum(sizes.values())} bytes: "
            + ", ".join(f"{k} {v}" for k, v in sorted(sizes.items()))
        ]
    held = graph_files(results)
    if held:
        shipped, launched = graph_kernels(results)
        kernels = f" ({shipped} Triton kernels shipped, {launched} launched)" if shipped or launched else ""
        lines[-1:-1] = [f"graphs    torch.compile's compiled graphs: {describe_graphs(held)}{kernels}"]
    rows = [("kernel", "key", "best config", "time ms", "found", "rejected", "compiled")]
    for e in results.entries:
        time_ms = "-" if e.best_time_ms == float("inf") else f"{e.best_time_ms:.4g}"
        rows.append(
            (
                e.kernel.name,
                format_key(e.key),
                _config_label(e),
                time_ms,
                e.found_by.value,
                str(len(e.rejected)),
                ", ".join(f"{a.gpu_target} {a.size_bytes // 1024} KiB" for a in e.artifacts) or "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(printable(line) for line in lines)  # a file's text never reaches a terminal raw


def _schemes(results: model.Results) -> str:
    """How the file's kernels are identified; the older scheme stales a kernel when a line moves above it."""
    kernels = {e.kernel for e in results.entries}
    old = sum(k.scheme is model.IdentityScheme.TRITON_CACHE_KEY for k in kernels)
    if not old:
        return "by source (moving a kernel or editing beside it keeps its entries)"
    return (
        f"{old} of {len(kernels)} kernels by Triton's cache key (made before identity by source: served until a"
        " line above the kernel changes)"
    )


def _config_label(entry: model.Entry) -> str:
    """Inductor's GEMM choices read template first (`triton::mm BLOCK_M=128 ... warps=8 stages=5`, or
    just `aten::mm`: an ATen kernel has no launch parameters of ours); the fusions a GEMM took, as what
    was fused (`epilogue=True prologue=False`)."""
    name = entry.kernel.name
    if name == GRAPH_KERNEL:
        return _counted(1, GRAPH_KINDS.get(str(dict(entry.best.kwargs).get(KIND)), "?"))
    if name == TORCH_KEY:
        return "torch's source hash for this wheel"
    if name.startswith(inductor_keys.PREFIX) and name.endswith(inductor_keys.FUSION):
        return " ".join(f"{k}={v}" for k, v in entry.best.kwargs)
    kwargs = dict(entry.best.kwargs)
    template = kwargs.pop(inductor_keys.TEMPLATE, None)
    if not name.startswith(inductor_keys.PREFIX) or not isinstance(template, str):
        return entry.best.describe()
    if template.startswith("aten::"):
        return template
    rest = model.Config.of(kwargs, num_warps=entry.best.num_warps, num_stages=entry.best.num_stages)
    return f"{template} {rest.describe()}"


def _bundle_name(arch: str) -> str:
    """The wheel this file would go into, or why it cannot (a file's arch is untrusted)."""
    try:
        return distribution_name(arch)
    except BundleError as exc:
        return f"none ({exc})"
