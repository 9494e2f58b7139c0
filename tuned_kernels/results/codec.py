"""Converts between the pure model and the protobuf messages, validating every field on the way in.

Decoding raises `ValueError` with the path of the offending field; files.py adds the file name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from tuned_kernels import model
from tuned_kernels.results import packing
from tuned_kernels.results import results_pb2 as pb
from tuned_kernels.whole_match import matches, whole

FORMAT_NAME = "tuned-kernels-results"
_VENDORS = ("nvidia", "amd", "cpu")
_IDENT = whole(r"[A-Za-z_][A-Za-z0-9_]*")
_HEX64 = whole(r"[0-9a-f]{64}")
_FILE_NAME = whole(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")
_GPU_TARGET = whole(r"(cuda|hip|cpu):[A-Za-z0-9_]+:\d+")
# a Triton argument type ("*fp16", "i32", "constexpr", "tensordesc<bf16[64, 64]>"): no quotes, parentheses,
# braces or semicolons, so nothing a bundle says can reach generated launcher code as code
_HOST_TYPE = whole(r"[A-Za-z0-9_*\[\], <>.#=-]{1,200}")
MAX_HOST_ARGS = 512
MAX_RESIDENT = 2048  # programs one multiprocessor holds: a thread each at most

_PRODUCERS = {
    model.Producer.TUNE: pb.PRODUCER_TUNE,
    model.Producer.CAPTURE: pb.PRODUCER_CAPTURE,
    model.Producer.MERGE: pb.PRODUCER_MERGE,
}
_FOUND_BY = {
    model.FoundBy.EXHAUSTIVE: pb.FOUND_BY_EXHAUSTIVE,
    model.FoundBy.SEEDED: pb.FOUND_BY_SEEDED,
    model.FoundBy.CAPTURED: pb.FOUND_BY_CAPTURED,
    model.FoundBy.ONLINE: pb.FOUND_BY_ONLINE,
    model.FoundBy.PREDICTED: pb.FOUND_BY_PREDICTED,
}
_SCHEMES = {
    model.IdentityScheme.TRITON_CACHE_KEY: pb.IDENTITY_TRITON_CACHE_KEY,
    model.IdentityScheme.SOURCE: pb.IDENTITY_SOURCE,
}
_SCHEMES_BACK = {v: k for k, v in _SCHEMES.items()}


# ---- model -> proto ---------------------------------------------------------------------------------


def scalar_to_pb(value: model.Scalar) -> pb.Scalar:
    if value is None:
        return pb.Scalar(none_value=True)
    if isinstance(value, bool):
        return pb.Scalar(bool_value=value)
    if isinstance(value, int):
        return pb.Scalar(int_value=value)
    if isinstance(value, float):
        return pb.Scalar(float_value=value)
    if isinstance(value, str):
        return pb.Scalar(str_value=value)
    raise TypeError(f"cannot store {type(value).__name__} {value!r}: only int, float, bool, str, None")


def config_to_pb(config: model.Config) -> pb.Config:
    return pb.Config(
        kwargs=[pb.Kwarg(name=k, value=scalar_to_pb(v)) for k, v in config.kwargs],
        num_warps=config.num_warps,
        num_stages=config.num_stages,
        num_ctas=config.num_ctas,
        maxnreg=config.maxnreg or 0,
    )


def results_to_pb(results: model.Results, packed: bool = False) -> pb.Results:
    """`packed` (binary files) stores the entries one by one with their slot digests (results/packing.py),
    so that `ResultsView` finds and decodes one key without parsing the others."""
    h = results.header
    kernels: dict[model.KernelIdentity, int] = {}
    configs: dict[model.Config, int] = {}
    for e in results.entries:
        kernels.setdefault(e.kernel, len(kernels))
        for c in (e.best, *(t.config for t in e.timings), *(r.config for r in e.rejected)):
            configs.setdefault(c, len(configs))
        for a in e.artifacts:
            configs.setdefault(a.config, len(configs))
    entries = [_entry_to_pb(e, kernels[e.kernel], configs) for e in results.entries]
    msg = pb.Results(
        format=FORMAT_NAME,
        header=pb.Header(
            schema_version=max(h.schema_version, model.SCHEMA_VERSION),
            target=pb.Target(
                vendor=h.target.vendor,
                arch=h.target.arch,
                device_name=h.target.device_name,
                multiprocessor_count=h.target.multiprocessor_count,
                memory_bytes=h.target.memory_bytes,
                driver_version=h.target.driver_version,
                runtime_version=h.target.runtime_version,
            ),
            compiler=pb.CompilerFingerprint(
                triton_version=h.compiler.triton_version,
                triton_hash=h.compiler.triton_hash,
                backend_hash=h.compiler.backend_hash,
                backend_versions=dict(h.compiler.backend_versions),
                torch_version=h.compiler.torch_version,
            ),
            tool_version=h.tool_version,
            created_at=h.created_at,
            producer=_PRODUCERS[h.producer],
        ),
        entries=[] if packed else entries,
        configs=[config_to_pb(c) for c in configs],
        blobs=dict(results.blobs),
        kernels=[
            pb.KernelIdentity(
                name=k.name,
                source_hash=k.source_hash,
                param_names=list(k.param_names),
                scheme=_SCHEMES[k.scheme],
            )
            for k in kernels
        ],
    )
    if packed:
        packing.pack(msg, entries, [model.slot_digest(e.slot) for e in results.entries])
    return msg


def _entry_to_pb(entry: model.Entry, kernel: int, configs: dict[model.Config, int]) -> pb.Entry:
    return pb.Entry(
        kernel=kernel,
        key=[scalar_to_pb(v) for v in entry.key],
        best=configs[entry.best],
        timings=[
            pb.Timing(config=configs[t.config], time_ms=t.time_ms, resident=t.resident) for t in entry.timings
        ],
        rejected=[pb.Rejection(config=configs[r.config], reason=r.reason) for r in entry.rejected],
        found_by=_FOUND_BY[entry.found_by],
        configs_benchmarked=entry.configs_benchmarked,
        tuned_at_ns=entry.tuned_at_ns,
        artifacts=[
            pb.Artifact(
                cache_key=a.cache_key,
                gpu_target=a.gpu_target,
                files=[
                    pb.ArtifactFile(name=f.name, sha256=f.sha256, size_bytes=f.size_bytes) for f in a.files
                ],
                config=configs[a.config],
                host_signature=list(a.host_signature),
            )
            for a in entry.artifacts
        ],
    )


# ---- proto -> model (validating) -----------------------------------------------------------------


def _require(condition: bool, field: str, expected: str) -> None:
    if not condition:
        raise ValueError(f"field {field}: expected {expected}")


def scalar_from_pb(msg: pb.Scalar, field: str) -> model.Scalar:
    kind = msg.WhichOneof("kind")
    _require(kind is not None, field, "one of int_value, float_value, bool_value, str_value, none_value")
    if kind == "none_value":
        return None
    value: model.Scalar = getattr(msg, kind)
    return value


def config_from_pb(msg: pb.Config, field: str) -> model.Config:
    names = [kw.name for kw in msg.kwargs]
    for i, name in enumerate(names):
        _require(matches(_IDENT, name), f"{field}.kwargs[{i}].name", "a Python identifier")
    _require(len(set(names)) == len(names), f"{field}.kwargs", "distinct names")
    _require(1 <= msg.num_warps <= 64, f"{field}.num_warps", "1..64")
    _require(msg.num_stages <= 16, f"{field}.num_stages", "0..16")
    _require(1 <= msg.num_ctas <= 16, f"{field}.num_ctas", "1..16")
    _require(msg.maxnreg <= 1024, f"{field}.maxnreg", "0 (unset) or at most 1024")
    kwargs = tuple(
        sorted(
            (kw.name, scalar_from_pb(kw.value, f"{field}.kwargs[{i}].value"))
            for i, kw in enumerate(msg.kwargs)
        )
    )
    return model.Config(kwargs, msg.num_warps, msg.num_stages, msg.num_ctas, msg.maxnreg or None)


def _time_from_pb(value: float, field: str) -> float:
    _require(not math.isnan(value) and value > 0, field, "a positive time in ms")
    return value


def kernels_from_pb(msg: pb.Results) -> tuple[model.KernelIdentity, ...]:
    kernels = []
    for i, k in enumerate(msg.kernels):
        _require(bool(k.name), f"kernels[{i}].name", "a kernel name")
        _require(matches(_HEX64, k.source_hash), f"kernels[{i}].source_hash", "64 hex digits")
        _require(k.scheme in _SCHEMES_BACK, f"kernels[{i}].scheme", "a known identity scheme")
        scheme = _SCHEMES_BACK[k.scheme]
        kernels.append(model.KernelIdentity(k.name, k.source_hash, tuple(k.param_names), scheme))
    return tuple(kernels)


def configs_from_pb(msg: pb.Results) -> tuple[model.Config, ...]:
    return tuple(config_from_pb(c, f"configs[{i}]") for i, c in enumerate(msg.configs))


@dataclass(frozen=True)
class Tables:
    """What entries refer to by index: kernels and configs, each stored once per file."""

    kernels: tuple[model.KernelIdentity, ...]
    configs: tuple[model.Config, ...]

    def kernel(self, index: int, field: str) -> model.KernelIdentity:
        _require(index < len(self.kernels), field, f"an index into the {len(self.kernels)} kernels")
        return self.kernels[index]

    def config(self, index: int, field: str) -> model.Config:
        _require(index < len(self.configs), field, f"an index into the {len(self.configs)} configs")
        return self.configs[index]


def tables_from_pb(msg: pb.Results) -> Tables:
    return Tables(kernels_from_pb(msg), configs_from_pb(msg))


def entry_from_pb(msg: pb.Entry, tables: Tables, field: str) -> model.Entry:
    artifacts = tuple(
        _artifact_from_pb(a, tables, f"{field}.artifacts[{i}]") for i, a in enumerate(msg.artifacts)
    )
    found_by = {v: k for k, v in _FOUND_BY.items()}.get(msg.found_by)
    _require(found_by is not None, f"{field}.found_by", "exhaustive, seeded, captured, online or predicted")
    assert found_by is not None
    return model.Entry(
        kernel=tables.kernel(msg.kernel, f"{field}.kernel"),
        key=tuple(scalar_from_pb(v, f"{field}.key[{i}]") for i, v in enumerate(msg.key)),
        best=tables.config(msg.best, f"{field}.best"),
        timings=tuple(
            model.Timing(
                tables.config(t.config, f"{field}.timings[{i}].config"),
                _time_from_pb(t.time_ms, f"{field}.timings[{i}].time_ms"),
                min(t.resident, MAX_RESIDENT),  # a figure, never a count to allocate by
            )
            for i, t in enumerate(msg.timings)
        ),
        rejected=tuple(
            model.Rejection(tables.config(r.config, f"{field}.rejected[{i}].config"), r.reason)
            for i, r in enumerate(msg.rejected)
        ),
        found_by=found_by,
        configs_benchmarked=msg.configs_benchmarked,
        artifacts=artifacts,
        tuned_at_ns=msg.tuned_at_ns,
    )


def _artifact_from_pb(msg: pb.Artifact, tables: Tables, field: str) -> model.Artifact:
    _require(matches(_HEX64, msg.cache_key), f"{field}.cache_key", "64 hex digits")
    _require(matches(_GPU_TARGET, msg.gpu_target), f"{field}.gpu_target", "backend:arch:warp_size")
    files = []
    for i, f in enumerate(msg.files):
        # a plain file name: nothing from a bundle may name a path outside the directory it is put in
        _require(matches(_FILE_NAME, f.name), f"{field}.files[{i}].name", "a plain file name")
        _require(matches(_HEX64, f.sha256), f"{field}.files[{i}].sha256", "64 hex digits")
        files.append(model.ArtifactFile(f.name, f.sha256, f.size_bytes))
    signature = tuple(msg.host_signature)
    _require(len(signature) <= MAX_HOST_ARGS, f"{field}.host_signature", f"at most {MAX_HOST_ARGS} types")
    for i, ty in enumerate(signature):
        _require(matches(_HOST_TYPE, ty), f"{field}.host_signature[{i}]", "a Triton argument type")
    return model.Artifact(
        msg.cache_key, msg.gpu_target, tuple(files), tables.config(msg.config, f"{field}.config"), signature
    )


def check_schema_version(version: int) -> None:
    if version > model.SCHEMA_VERSION:
        raise ValueError(
            f"written with results schema v{version}, newer than this tuned-kernels reads "
            f"(v{model.SCHEMA_VERSION}); upgrade tuned-kernels"
        )
    _require(version >= 1, "header.schema_version", f"1..{model.SCHEMA_VERSION}")


def two_for_one_key(first: int, second: int) -> str:
    """What a file holding two entries for one key is told (which one a look-up got would depend on how it
    searched): the same words whether the file is read whole or looked up."""
    return f"field entries[{first}] and entries[{second}]: expected one entry for each key"


def check_blob_keys(msg: pb.Results) -> None:
    """Every blob is named by a sha256 (its contents are checked against it where they are used)."""
    for sha in msg.blobs:
        _require(matches(_HEX64, sha), "blobs", "keys of 64 hex digits")


def check_one_entry_per_key(positioned: Iterable[tuple[int, model.Entry]]) -> None:
    """Raises ValueError naming the file positions of the first two entries that hold one key."""
    first: dict[model.EntrySlot, int] = {}
    for i, entry in positioned:
        if first.setdefault(entry.slot, i) != i:
            raise ValueError(two_for_one_key(first[entry.slot], i))


def results_from_pb(msg: pb.Results, stored: packing.Entries) -> model.Results:
    """Every entry of `msg`, decoded; `stored` is `msg`'s entries as opened (packed or not)."""
    header = header_from_pb(msg)
    tables = tables_from_pb(msg)
    entries = tuple(entry_from_pb(stored.raw(i), tables, f"entries[{i}]") for i in range(len(stored)))
    check_blob_keys(msg)
    check_one_entry_per_key(enumerate(entries))
    # blob contents are checked against their sha256 where they are used (triton_edge.cache_manager)
    return model.Results(header, entries, dict(msg.blobs))


def header_from_pb(msg: pb.Results) -> model.Header:
    _require(msg.format == FORMAT_NAME, "format", f'"{FORMAT_NAME}" (is this a tuned-kernels results file?)')
    _require(msg.HasField("header"), "header", "a header")
    h = msg.header
    check_schema_version(h.schema_version)
    _require(h.target.vendor in _VENDORS, "header.target.vendor", " | ".join(_VENDORS))
    _require(bool(h.target.arch), "header.target.arch", "an architecture such as sm90")
    _require(bool(h.compiler.triton_version), "header.compiler.triton_version", "a Triton version")
    producer = {v: k for k, v in _PRODUCERS.items()}.get(h.producer)
    _require(producer is not None, "header.producer", "tune, capture or merge")
    assert producer is not None
    return model.Header(
        target=model.Target(
            vendor=h.target.vendor,  # type: ignore[arg-type]
            arch=h.target.arch,
            device_name=h.target.device_name,
            multiprocessor_count=h.target.multiprocessor_count,
            memory_bytes=h.target.memory_bytes,
            driver_version=h.target.driver_version,
            runtime_version=h.target.runtime_version,
        ),
        compiler=model.CompilerFingerprint(
            triton_version=h.compiler.triton_version,
            triton_hash=h.compiler.triton_hash,
            backend_hash=h.compiler.backend_hash,
            backend_versions=tuple(sorted(h.compiler.backend_versions.items())),
            torch_version=h.compiler.torch_version,
        ),
        producer=producer,
        tool_version=h.tool_version,
        created_at=h.created_at,
        schema_version=h.schema_version,
    )
