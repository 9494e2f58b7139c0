from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Producer(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRODUCER_UNSPECIFIED: _ClassVar[Producer]
    PRODUCER_TUNE: _ClassVar[Producer]
    PRODUCER_CAPTURE: _ClassVar[Producer]
    PRODUCER_MERGE: _ClassVar[Producer]

class IdentityScheme(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IDENTITY_TRITON_CACHE_KEY: _ClassVar[IdentityScheme]
    IDENTITY_SOURCE: _ClassVar[IdentityScheme]

class FoundBy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FOUND_BY_UNSPECIFIED: _ClassVar[FoundBy]
    FOUND_BY_EXHAUSTIVE: _ClassVar[FoundBy]
    FOUND_BY_SEEDED: _ClassVar[FoundBy]
    FOUND_BY_CAPTURED: _ClassVar[FoundBy]
    FOUND_BY_ONLINE: _ClassVar[FoundBy]
    FOUND_BY_PREDICTED: _ClassVar[FoundBy]
PRODUCER_UNSPECIFIED: Producer
PRODUCER_TUNE: Producer
PRODUCER_CAPTURE: Producer
PRODUCER_MERGE: Producer
IDENTITY_TRITON_CACHE_KEY: IdentityScheme
IDENTITY_SOURCE: IdentityScheme
FOUND_BY_UNSPECIFIED: FoundBy
FOUND_BY_EXHAUSTIVE: FoundBy
FOUND_BY_SEEDED: FoundBy
FOUND_BY_CAPTURED: FoundBy
FOUND_BY_ONLINE: FoundBy
FOUND_BY_PREDICTED: FoundBy

class Target(_message.Message):
    __slots__ = ("vendor", "arch", "device_name", "multiprocessor_count", "memory_bytes", "driver_version", "runtime_version")
    VENDOR_FIELD_NUMBER: _ClassVar[int]
    ARCH_FIELD_NUMBER: _ClassVar[int]
    DEVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    MULTIPROCESSOR_COUNT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    DRIVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_VERSION_FIELD_NUMBER: _ClassVar[int]
    vendor: str
    arch: str
    device_name: str
    multiprocessor_count: int
    memory_bytes: int
    driver_version: str
    runtime_version: str
    def __init__(self, vendor: _Optional[str] = ..., arch: _Optional[str] = ..., device_name: _Optional[str] = ..., multiprocessor_count: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., driver_version: _Optional[str] = ..., runtime_version: _Optional[str] = ...) -> None: ...

class CompilerFingerprint(_message.Message):
    __slots__ = ("triton_version", "triton_hash", "backend_hash", "backend_versions", "torch_version")
    class BackendVersionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TRITON_VERSION_FIELD_NUMBER: _ClassVar[int]
    TRITON_HASH_FIELD_NUMBER: _ClassVar[int]
    BACKEND_HASH_FIELD_NUMBER: _ClassVar[int]
    BACKEND_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    TORCH_VERSION_FIELD_NUMBER: _ClassVar[int]
    triton_version: str
    triton_hash: str
    backend_hash: str
    backend_versions: _containers.ScalarMap[str, str]
    torch_version: str
    def __init__(self, triton_version: _Optional[str] = ..., triton_hash: _Optional[str] = ..., backend_hash: _Optional[str] = ..., backend_versions: _Optional[_Mapping[str, str]] = ..., torch_version: _Optional[str] = ...) -> None: ...

class Header(_message.Message):
    __slots__ = ("schema_version", "target", "compiler", "tool_version", "created_at", "producer")
    SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    COMPILER_FIELD_NUMBER: _ClassVar[int]
    TOOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_FIELD_NUMBER: _ClassVar[int]
    schema_version: int
    target: Target
    compiler: CompilerFingerprint
    tool_version: str
    created_at: str
    producer: Producer
    def __init__(self, schema_version: _Optional[int] = ..., target: _Optional[_Union[Target, _Mapping]] = ..., compiler: _Optional[_Union[CompilerFingerprint, _Mapping]] = ..., tool_version: _Optional[str] = ..., created_at: _Optional[str] = ..., producer: _Optional[_Union[Producer, str]] = ...) -> None: ...

class Scalar(_message.Message):
    __slots__ = ("int_value", "float_value", "bool_value", "str_value", "none_value")
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    FLOAT_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    STR_VALUE_FIELD_NUMBER: _ClassVar[int]
    NONE_VALUE_FIELD_NUMBER: _ClassVar[int]
    int_value: int
    float_value: float
    bool_value: bool
    str_value: str
    none_value: bool
    def __init__(self, int_value: _Optional[int] = ..., float_value: _Optional[float] = ..., bool_value: _Optional[bool] = ..., str_value: _Optional[str] = ..., none_value: _Optional[bool] = ...) -> None: ...

class KernelIdentity(_message.Message):
    __slots__ = ("name", "source_hash", "param_names", "scheme")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_HASH_FIELD_NUMBER: _ClassVar[int]
    PARAM_NAMES_FIELD_NUMBER: _ClassVar[int]
    SCHEME_FIELD_NUMBER: _ClassVar[int]
    name: str
    source_hash: str
    param_names: _containers.RepeatedScalarFieldContainer[str]
    scheme: IdentityScheme
    def __init__(self, name: _Optional[str] = ..., source_hash: _Optional[str] = ..., param_names: _Optional[_Iterable[str]] = ..., scheme: _Optional[_Union[IdentityScheme, str]] = ...) -> None: ...

class Kwarg(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: Scalar
    def __init__(self, name: _Optional[str] = ..., value: _Optional[_Union[Scalar, _Mapping]] = ...) -> None: ...

class Config(_message.Message):
    __slots__ = ("kwargs", "num_warps", "num_stages", "num_ctas", "maxnreg")
    KWARGS_FIELD_NUMBER: _ClassVar[int]
    NUM_WARPS_FIELD_NUMBER: _ClassVar[int]
    NUM_STAGES_FIELD_NUMBER: _ClassVar[int]
    NUM_CTAS_FIELD_NUMBER: _ClassVar[int]
    MAXNREG_FIELD_NUMBER: _ClassVar[int]
    kwargs: _containers.RepeatedCompositeFieldContainer[Kwarg]
    num_warps: int
    num_stages: int
    num_ctas: int
    maxnreg: int
    def __init__(self, kwargs: _Optional[_Iterable[_Union[Kwarg, _Mapping]]] = ..., num_warps: _Optional[int] = ..., num_stages: _Optional[int] = ..., num_ctas: _Optional[int] = ..., maxnreg: _Optional[int] = ...) -> None: ...

class Timing(_message.Message):
    __slots__ = ("config", "time_ms", "resident")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    RESIDENT_FIELD_NUMBER: _ClassVar[int]
    config: int
    time_ms: float
    resident: int
    def __init__(self, config: _Optional[int] = ..., time_ms: _Optional[float] = ..., resident: _Optional[int] = ...) -> None: ...

class Rejection(_message.Message):
    __slots__ = ("config", "reason")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    config: int
    reason: str
    def __init__(self, config: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class ArtifactFile(_message.Message):
    __slots__ = ("name", "sha256", "size_bytes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    sha256: str
    size_bytes: int
    def __init__(self, name: _Optional[str] = ..., sha256: _Optional[str] = ..., size_bytes: _Optional[int] = ...) -> None: ...

class Artifact(_message.Message):
    __slots__ = ("cache_key", "gpu_target", "files", "config", "host_signature")
    CACHE_KEY_FIELD_NUMBER: _ClassVar[int]
    GPU_TARGET_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    HOST_SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    cache_key: str
    gpu_target: str
    files: _containers.RepeatedCompositeFieldContainer[ArtifactFile]
    config: int
    host_signature: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, cache_key: _Optional[str] = ..., gpu_target: _Optional[str] = ..., files: _Optional[_Iterable[_Union[ArtifactFile, _Mapping]]] = ..., config: _Optional[int] = ..., host_signature: _Optional[_Iterable[str]] = ...) -> None: ...

class Entry(_message.Message):
    __slots__ = ("kernel", "key", "best", "timings", "rejected", "found_by", "configs_benchmarked", "artifacts", "tuned_at_ns")
    KERNEL_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    BEST_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    FOUND_BY_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_BENCHMARKED_FIELD_NUMBER: _ClassVar[int]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    TUNED_AT_NS_FIELD_NUMBER: _ClassVar[int]
    kernel: int
    key: _containers.RepeatedCompositeFieldContainer[Scalar]
    best: int
    timings: _containers.RepeatedCompositeFieldContainer[Timing]
    rejected: _containers.RepeatedCompositeFieldContainer[Rejection]
    found_by: FoundBy
    configs_benchmarked: int
    artifacts: _containers.RepeatedCompositeFieldContainer[Artifact]
    tuned_at_ns: int
    def __init__(self, kernel: _Optional[int] = ..., key: _Optional[_Iterable[_Union[Scalar, _Mapping]]] = ..., best: _Optional[int] = ..., timings: _Optional[_Iterable[_Union[Timing, _Mapping]]] = ..., rejected: _Optional[_Iterable[_Union[Rejection, _Mapping]]] = ..., found_by: _Optional[_Union[FoundBy, str]] = ..., configs_benchmarked: _Optional[int] = ..., artifacts: _Optional[_Iterable[_Union[Artifact, _Mapping]]] = ..., tuned_at_ns: _Optional[int] = ...) -> None: ...

class Results(_message.Message):
    __slots__ = ("format", "header", "entries", "blobs", "kernels", "configs", "index", "packed_entries", "entry_ends", "entry_kernels", "packed_index")
    class BlobsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    BLOBS_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PACKED_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    ENTRY_ENDS_FIELD_NUMBER: _ClassVar[int]
    ENTRY_KERNELS_FIELD_NUMBER: _ClassVar[int]
    PACKED_INDEX_FIELD_NUMBER: _ClassVar[int]
    format: str
    header: Header
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    blobs: _containers.ScalarMap[str, bytes]
    kernels: _containers.RepeatedCompositeFieldContainer[KernelIdentity]
    configs: _containers.RepeatedCompositeFieldContainer[Config]
    index: _containers.RepeatedScalarFieldContainer[bytes]
    packed_entries: bytes
    entry_ends: bytes
    entry_kernels: bytes
    packed_index: bytes
    def __init__(self, format: _Optional[str] = ..., header: _Optional[_Union[Header, _Mapping]] = ..., entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ..., blobs: _Optional[_Mapping[str, bytes]] = ..., kernels: _Optional[_Iterable[_Union[KernelIdentity, _Mapping]]] = ..., configs: _Optional[_Iterable[_Union[Config, _Mapping]]] = ..., index: _Optional[_Iterable[bytes]] = ..., packed_entries: _Optional[bytes] = ..., entry_ends: _Optional[bytes] = ..., entry_kernels: _Optional[bytes] = ..., packed_index: _Optional[bytes] = ...) -> None: ...

class ResultsEnvelope(_message.Message):
    __slots__ = ("format", "schema_version", "payload", "sha256")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    format: str
    schema_version: int
    payload: bytes
    sha256: bytes
    def __init__(self, format: _Optional[str] = ..., schema_version: _Optional[int] = ..., payload: _Optional[bytes] = ..., sha256: _Optional[bytes] = ...) -> None: ...
