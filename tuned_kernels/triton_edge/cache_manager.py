"""Serves a bundle's compiled kernels to Triton through its pluggable cache manager.

`ArtifactCacheManager` wraps the cache manager Triton would otherwise use (its `FileCacheManager`, or the
user's own `TRITON_CACHE_MANAGER`). A compile whose cache key the user's cache does not hold, but a selected
bundle does, gets the bundle's files written into the user's cache (sha256 checked, by the wrapped manager's
own atomic `put`) and then loads them as any cached kernel: no compilation. Anything else is passed
through. A bad or missing artifact makes Triton compile as usual, with one warning.

When capturing, every kernel Triton compiles or finds in its cache is recorded too (`recorder`, told by
Triton's compilation listener, which also gives the kernel's signature: its host launcher can then be built ahead,
`host_modules`), so a program's plain `@triton.jit` kernels and every specialization it launched ship too;
compiles made while configs are benchmarked (`recording_paused`) are left out: only winners are kept of those.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuned_kernels import model
from tuned_kernels.triton_edge.artifact_check import (
    BINARY_SUFFIXES,
    METADATA_SUFFIX,
    gpu_target_of,
    settings_apart,
    why_not_served,
)

MAX_NAMES_KEPT = 20


@dataclass(frozen=True)
class _Held:
    artifact: model.Artifact
    blobs: Mapping[str, bytes]
    source: str


class ArtifactStore:
    """The compiled kernels of the selected bundles, by the key Triton's cache manager is created with."""

    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}
        self._lock = threading.Lock()
        self.served = 0
        self.failed = 0
        self.compiled_here = 0  # kernels Triton compiled and stored through this manager
        self.compiled_here_names: list[str] = []  # the first MAX_NAMES_KEPT of them, by kernel name
        self.on_problem: Callable[[str], None] = lambda _: None
        self.said_settings_apart = False

    def add(self, results: model.Results, source: str, other_files: str = "") -> int:
        """Holds the compiled kernels of `results` (not the files of the kernel named `other_files`: they
        are no Triton kernels)."""
        added = 0
        for entry in results.entries:
            if entry.kernel.name == other_files:
                continue
            for artifact in entry.artifacts:
                manager_key = triton_manager_key(artifact.cache_key)
                if manager_key not in self._held:
                    self._held[manager_key] = _Held(artifact, results.blobs, source)
                    added += 1
        return added

    def clear(self) -> None:
        self._held.clear()

    def __len__(self) -> int:
        return len(self._held)

    def files_for(self, manager_key: str, metadata_name: str) -> dict[str, bytes] | None:
        """The verified files of the artifact under `manager_key` when Triton asks it for `metadata_name`,
        or None (with one warning if bad: Triton compiles the kernel instead)."""
        held = self._held.get(manager_key)
        if held is None:
            return None
        files = {}
        for f in held.artifact.files:
            data = held.blobs.get(f.sha256)
            if data is None or hashlib.sha256(data).hexdigest() != f.sha256:
                self._fail(held, f"{f.name} is {'missing' if data is None else 'corrupt (sha256 differs)'}")
                return None
            files[f.name] = data
        why = why_not_served(held.artifact, files, metadata_name)
        if why is not None:
            self._fail(held, why)
            return None
        return files

    def _fail(self, held: _Held, why: str) -> None:
        with self._lock:
            self.failed += 1
            first = self.failed == 1
            self._held = {k: v for k, v in self._held.items() if v is not held}
        if first:  # one warning per process: a bad bundle must not flood the user's log
            self.on_problem(f"compiled kernel from {held.source}: {why}; compiling it instead")

    def count_served(self) -> None:
        with self._lock:
            self.served += 1

    def count_compiled(self, name: str, metadata: bytes | None = None) -> None:
        """Triton compiled the kernel `name` here (`metadata`: its metadata file). Where the bundles hold
        that kernel compiled under other settings only, why it was not served is said once."""
        with self._lock:
            self.compiled_here += 1
            if len(self.compiled_here_names) < MAX_NAMES_KEPT:
                self.compiled_here_names.append(name)
            if self.said_settings_apart:
                return
            held = [
                h
                for h in self._held.values()
                if any(f.name == name + METADATA_SUFFIX for f in h.artifact.files)
            ]
        try:
            apart = _settings_apart_from(held, name + METADATA_SUFFIX, metadata)
        except Exception:  # in Triton's compile path: unreadable metadata, or any other failure, says nothing
            return
        with self._lock:
            first = bool(apart) and not self.said_settings_apart
            self.said_settings_apart = self.said_settings_apart or bool(apart)
        if first:
            self.on_problem(
                f"compiled kernel {name}: the bundles hold it compiled under other Triton settings "
                f"({'; '.join(apart)}); Triton compiles it here"
            )


def _settings_apart_from(held: list[_Held], metadata_name: str, metadata: bytes | None) -> list[str]:
    """The settings a kernel compiled here differs in from the closest of the bundles' compiles of it (none
    where one differs in none: another specialization or config, not another setting)."""
    if not held or metadata is None:
        return []
    compiled = json.loads(metadata)
    candidates = []
    for h in held:
        sha = next(f.sha256 for f in h.artifact.files if f.name == metadata_name)
        candidates.append(settings_apart(json.loads(h.blobs[sha]), compiled))
    return min(candidates, key=len)


def triton_manager_key(cache_key: str) -> str:
    """Triton creates cache managers with the base32 form of its hex compile hash."""
    return base64.b32encode(bytes.fromhex(cache_key)).decode("ascii").rstrip("=")


class ArtifactCacheManager:
    """A Triton `CacheManager` that falls back to the selected bundles' compiled kernels."""

    inner_class: Any = None  # the manager class Triton used before: set by `install`
    store: ArtifactStore = ArtifactStore()  # what `install` was given (Triton creates managers by class)

    def __init__(self, key: str, override: bool = False, dump: bool = False) -> None:
        self.key = key
        self.inner = type(self).inner_class(key, override=override, dump=dump)
        self.serving = not (override or dump)

    def get_group(self, filename: str) -> dict[str, str] | None:
        group: dict[str, str] | None = self.inner.get_group(filename)
        if group is not None or not self.serving:
            return group
        store = type(self).store
        files = store.files_for(self.key, filename)
        if files is None:
            return None
        try:
            group = {name: str(self.inner.put(data, name, binary=True)) for name, data in files.items()}
            self.inner.put_group(filename, group)
        except Exception as exc:  # an unwritable cache: Triton compiles (and reports its own error)
            store.on_problem(f"cannot place a compiled kernel in Triton's cache: {exc}")
            return None
        store.count_served()
        return group

    def get_file(self, filename: str) -> Any:
        return self.inner.get_file(filename)

    def put(self, data: Any, filename: str, binary: bool = True) -> Any:
        return self.inner.put(data, filename, binary=binary)

    def put_group(self, filename: str, group: dict[str, str]) -> Any:
        stored = self.inner.put_group(filename, group)
        if filename.endswith(METADATA_SUFFIX):  # Triton compiled a kernel (served ones are placed above)
            type(self).store.count_compiled(
                filename.removesuffix(METADATA_SUFFIX), _read(group.get(filename))
            )
        listener = _capturing[0] if _capturing else None
        if listener is not None and filename.endswith(METADATA_SUFFIX):
            from triton import knobs

            if knobs.compilation.listener is not listener:  # the program replaced it: recorded here,
                listener(src=None, metadata=None, metadata_group=group)  # without the signature
        return stored

    def __getattr__(self, name: str) -> Any:  # anything else Triton asks of its cache manager
        return getattr(self.__dict__["inner"], name)


def _read(path: str | None) -> bytes | None:
    """A compiled kernel's metadata file Triton just wrote into its cache (small), or None."""
    try:
        return Path(path).read_bytes() if path else None
    except OSError:
        return None


Recorder = Callable[[model.Artifact, dict[str, bytes], str], None]  # a compiled kernel, its bytes, its name
_paused: list[bool] = []
_capturing: list[CompileListener] = []  # the listener `install` set when given a recorder


@contextlib.contextmanager
def recording_paused() -> Iterator[None]:
    """Compiles within this block (benchmarking configs) are not recorded."""
    _paused.append(True)
    try:
        yield
    finally:
        _paused.pop()


@contextlib.contextmanager
def recording_compiles(recorder: Recorder) -> Iterator[None]:
    """Within this block, each kernel Triton compiles outside benchmarking goes to `recorder` (the tuner's
    own capture of a kernel that compiles through Triton on its own, as a Helion kernel does)."""
    from triton import knobs

    before = knobs.compilation.listener
    knobs.compilation.listener = CompileListener(recorder, before)
    try:
        yield
    finally:
        knobs.compilation.listener = before


class CompileListener:
    """Triton's `knobs.compilation.listener` while capturing: each kernel Triton compiles, or finds in its
    cache, outside benchmarking goes to `recorder` with its host signature (once per process); the listener
    set before still hears every one.
    A kernel it cannot keep is a problem told to the installed store."""

    def __init__(self, recorder: Recorder, before: Any) -> None:
        self.recorder = recorder
        self.before = before
        self._kept: set[str] = set()  # the metadata files recorded in this process, read once each

    def __call__(self, *, src: Any, metadata: Any, metadata_group: dict[str, str], **rest: Any) -> None:
        if self.before is not None and src is not None:
            self.before(src=src, metadata=metadata, metadata_group=metadata_group, **rest)
        # a kernel found in Triton's cache counts too: the user's cache may be warm from runs before the capture
        kept = metadata_group.get(_metadata_name(metadata_group), "")
        if _paused or kept in self._kept:
            return
        self._kept.add(kept)
        try:
            compiled = compiled_kernel(metadata_group, host_signature(src))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            name = _metadata_name(metadata_group)
            ArtifactCacheManager.store.on_problem(f"could not keep compiled kernel {name}: {exc}")
            return
        if compiled is not None:
            self.recorder(*compiled)


def host_signature(src: Any) -> tuple[str, ...]:
    """The argument types Triton's host launcher is generated from (its source's `signature`, in order);
    () when a type is not a plain string (a tuple argument): such a launcher is left to Triton."""
    types = tuple(getattr(src, "signature", {}).values())
    return types if all(isinstance(t, str) for t in types) else ()


def compiled_kernel(
    group: Mapping[str, str], signature: tuple[str, ...] = ()
) -> tuple[model.Artifact, dict[str, bytes], str] | None:
    """The artifact Triton's cache holds under a group (metadata and binary, hashed), or None when the group
    is not a GPU kernel's; `signature` is its `host_signature`."""
    metadata_name = _metadata_name(group)
    kept = {
        name: Path(path).read_bytes()
        for name, path in group.items()
        if name.endswith((METADATA_SUFFIX, *BINARY_SUFFIXES))
    }
    if metadata_name not in kept or not any(n.endswith(BINARY_SUFFIXES) for n in kept):
        return None
    metadata = json.loads(kept[metadata_name])
    files = tuple(
        model.ArtifactFile(n, hashlib.sha256(d).hexdigest(), len(d)) for n, d in sorted(kept.items())
    )
    config = model.Config.of({}, num_warps=int(metadata["num_warps"]), num_stages=int(metadata["num_stages"]))
    artifact = model.Artifact(str(metadata["hash"]), gpu_target_of(metadata), files, config, signature)
    return artifact, {f.sha256: kept[f.name] for f in files}, str(metadata["name"])


def _metadata_name(group: Mapping[str, str]) -> str:
    """The name of a cache group's metadata file ("" if it has none)."""
    return next((n for n in sorted(group) if n.endswith(METADATA_SUFFIX)), "")


def install(store: ArtifactStore, recorder: Recorder | None = None) -> None:
    """From now on Triton's compiles consult `store` (and are told to `recorder`) (idempotent)."""
    from triton import knobs
    from triton.runtime.cache import FileCacheManager

    ArtifactCacheManager.store = store
    if recorder is not None:
        if _capturing:
            _capturing[0].recorder = recorder
        else:
            _capturing.append(CompileListener(recorder, knobs.compilation.listener))
        knobs.compilation.listener = _capturing[0]
    current = knobs.cache.manager_class or FileCacheManager
    if current is not ArtifactCacheManager:
        ArtifactCacheManager.inner_class = current
        knobs.cache.manager_class = ArtifactCacheManager


def uninstall() -> None:
    from triton import knobs

    if knobs.cache.manager_class is ArtifactCacheManager:
        knobs.cache.manager_class = ArtifactCacheManager.inner_class
    if _capturing:
        listener = _capturing.pop()
        if knobs.compilation.listener is listener:
            knobs.compilation.listener = listener.before
