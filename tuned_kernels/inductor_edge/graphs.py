"""A torch.compile program's compiled graphs, as a warm machine holds them, so that a served program's first
call finds each graph in Inductor's caches: no AOTAutograd tracing, no lowering, no code generation, no C++
or Triton compile.

Inductor keeps them in its cache directory, named by its own keys (hashes of the graph, its inputs, the
config, torch's source and the device):
- `fxgraph/<2>/<key>/<entry>`: the FX-graph cache, the generated code of one graph; on a GPU with the
  Triton kernels it compiled bundled in;
- `aotautograd/<key>/<entry>`: the AOTAutograd cache, a forward and backward naming their FX-graph entries;
- `<2>/c<hash>[.main].so`: on the CPU, the C++ objects the generated code loads, named by their source and
  compile command (which names torch's include folders: found again where torch is installed at the same
  path and the CPU picks the same vector instructions; elsewhere Inductor compiles the C++ again).

Capture harvests them from the private cache directory it gives the program; serving places a bundle's into
Inductor's cache directory where no file is (never over one), each checked first against its sha256 and,
where the file holds its key, against its key (Inductor loads what it finds under a key without checking it
belongs there), and a pickled entry against being one whole pickle: a graph is code Inductor loads. Each
file is one entry of the kernel `inductor.graph` (its source: torch's version) at the key of its path, its
bytes one artifact.
"""

from __future__ import annotations

import hashlib
import pickletools
import platform
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tuned_kernels import model
from tuned_kernels.inductor_edge.cache_files import place_new_file
from tuned_kernels.inductor_edge.keys import PREFIX, torch_source_hash
from tuned_kernels.whole_match import matches, whole

NAME = f"{PREFIX}graph"
MAX_FILE_BYTES = 256 << 20
_HASH = r"[a-z0-9]{20,64}"
# Inductor's names for what a graph leaves in its cache directory, by the kind stored in the entry's config
PATHS = {
    "fxgraph": whole(rf"fxgraph/[a-z0-9]{{2}}/f{_HASH}/{_HASH}"),
    "aotautograd": whole(rf"aotautograd/a{_HASH}/{_HASH}"),
    "cpp": whole(rf"[a-z0-9]{{2}}/c{_HASH}(\.main)?\.so"),
    "frame": whole(r"frames/[0-9a-f]{64}\.frame"),  # not Inductor's: a Dynamo frame (frames.py), never placed
}
FRAME = "frame"
FUNCTION = "function"  # a frame's config kwarg naming the function it is for (module.qualname)
PICKLED = ("fxgraph", "aotautograd")  # the kinds Inductor unpickles (a C++ object it loads as a library)
KIND = "cache"  # the config kwarg naming the kind
BlobLookup = Callable[[str], bytes | None]  # a file's bytes by its sha256 (None: the bundle lacks them)


def identity() -> model.KernelIdentity:
    return model.KernelIdentity(NAME, torch_source_hash())


def kind_of(relative: str) -> str | None:
    return next((kind for kind, pattern in PATHS.items() if matches(pattern, relative)), None)


def harvest(cache_dir: Path, gpu_target: str) -> tuple[list[model.Entry], dict[str, bytes]]:
    """An entry per graph file under an Inductor cache directory, and the files' bytes by sha256."""
    entries, blobs = [], {}
    candidates = [
        *cache_dir.glob("fxgraph/*/*/*"),
        *cache_dir.glob("aotautograd/*/*"),
        *cache_dir.glob("*/*.so"),
        *cache_dir.glob("frames/*.frame"),
    ]
    for path in sorted(candidates):
        relative = path.relative_to(cache_dir).as_posix()
        kind = kind_of(relative)
        try:
            if kind is None or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if kind == "fxgraph":
            data = launched_only(data)
        sha = hashlib.sha256(data).hexdigest()
        config = model.Config.of({KIND: kind, **_function_of(data, kind)})
        files = (model.ArtifactFile(path.name, sha, len(data)),)
        artifact = model.Artifact(sha, gpu_target, files, config)
        entries.append(
            model.Entry(
                identity(), (relative,), config, found_by=model.FoundBy.CAPTURED, artifacts=(artifact,)
            )
        )
        blobs[sha] = data
    return entries, blobs


def _function_of(data: bytes, kind: str) -> dict[str, str]:
    if kind != FRAME:
        return {}
    from tuned_kernels.inductor_edge import frame_file

    try:
        return {FUNCTION: frame_file.read(data)[0].name}
    except ValueError:
        return {}


_DEFINED = re.compile(r"""async_compile\.triton\(\s*['"](\w+)['"]""")


def launched_only(data: bytes) -> bytes:
    """An FX-graph entry holding only the compiled Triton kernels its generated code defines. Inductor
    bundles every kernel compiled while the graph compiled, under max-autotune each GEMM candidate it
    benchmarked too (1,304 kernels, 49 MB for two decoder blocks), and a served graph launches a few dozen.

    Capture only: the entry is one Inductor just wrote into the capture's private cache directory (the
    user's own program, run by the user), unpickled and pickled again as Inductor does. Anything not as
    expected keeps the entry as it was."""
    import pickle

    try:
        graph = pickle.loads(data)
        return pickle.dumps(graph) if keep_launched(graph) else data
    except Exception:  # another torch's layout, or one this code does not know: shipped whole
        return data


def keep_launched(graph: object) -> bool:
    """Drops from a compiled graph (Inductor's `CompiledFxGraph`) the compiled Triton kernels its generated
    code does not define; whether it dropped any (a graph laid out otherwise is left as it is)."""
    import dataclasses

    bundle, source = getattr(graph, "_triton_bundle", None), getattr(graph, "source_code", None)
    if bundle is None or not isinstance(source, str) or not hasattr(bundle, "kernel_artifacts"):
        return False
    names = set(_DEFINED.findall(source))
    if not names:  # generated code written otherwise than this knows: shipped whole
        return False
    names |= {getattr(a, "kernel_name", None) for a in getattr(bundle, "static_autotuners", ())}
    kept = [k for k in bundle.kernel_artifacts if any(_kernel_of(a.filename) in names for a in k.artifacts)]
    if len(kept) == len(bundle.kernel_artifacts):
        return False
    graph._triton_bundle = dataclasses.replace(bundle, kernel_artifacts=kept)  # type: ignore[attr-defined]
    return True


def _kernel_of(filename: str) -> str:
    """The kernel a file of Triton's cache belongs to (`triton_mm_3.cubin`, `__grp__triton_mm_3.json`)."""
    return filename.split(".", 1)[0].removeprefix("__grp__")


def files_target(arch: str) -> str:
    """What the graph files compiled here for the target `arch` were built for, as an artifact records it:
    Triton's target on a GPU (`cuda:90:32`), the processor on the CPU (`cpu:x86_64:0`)."""
    from tuned_kernels.hardware.archs import triton_target_of

    if arch == "cpu":
        machine = "".join(c for c in platform.machine() if c.isalnum() or c == "_") or "unknown"
        return f"cpu:{machine}:0"
    backend, triton_arch, warp_size = triton_target_of(arch)
    return f"{backend}:{triton_arch}:{warp_size}"


@dataclass
class Placed:
    """What placing a bundle's graph files did."""

    written: int = 0
    present: int = 0  # already in the cache directory (left as they were)
    refused: list[str] = field(default_factory=list)  # why a file was not placed, one per file
    files: dict[str, str] = field(default_factory=dict)  # what was written: relative path -> sha256


def why_not_placed(entry: model.Entry, blob: BlobLookup) -> str | None:
    """Why a stored entry's file must not reach Inductor's cache directory, or None."""
    return checked_file(entry, blob)[1]


def checked_file(entry: model.Entry, blob: BlobLookup) -> tuple[bytes | None, str | None]:
    """A stored entry's file, read once and checked (its key a path of a kind this knows, its config naming
    that kind, one file of that name, within the size bound, its sha256, its own key where the file holds
    one), or None and why not."""
    relative = entry.key[0] if len(entry.key) == 1 else None
    if not isinstance(relative, str) or kind_of(relative) is None:
        return None, f"key {str(entry.key)[:80]} is not a path Inductor's caches use"
    if dict(entry.best.kwargs).get(KIND) != kind_of(relative) or len(entry.artifacts) != 1:
        return None, f"{relative}: its config does not name its kind"
    (artifact,) = entry.artifacts
    if len(artifact.files) != 1 or artifact.files[0].name != relative.rsplit("/", 1)[-1]:
        return None, f"{relative}: not one file of that name"
    (stored,) = artifact.files
    data = blob(stored.sha256)
    if data is None:
        return None, f"{relative}: its bytes are missing"
    if len(data) > MAX_FILE_BYTES:
        return (
            None,
            f"{relative}: {len(data)} bytes, over the {MAX_FILE_BYTES >> 20} MiB a graph file may hold",
        )
    if hashlib.sha256(data).hexdigest() != stored.sha256:
        return None, f"{relative}: corrupt (sha256 differs)"
    own = own_name(relative)
    if own is not None and own.encode() not in data:
        return None, f"{relative}: its contents are another key's"
    return data, None


def whole_pickle(data: bytes) -> bool:
    """Whether `data` reads as one pickle up to its STOP, opcode by opcode: nothing is loaded or imported,
    so any bundle's file may be read so. A truncated entry fails, and some bit flips."""
    try:
        for _ in pickletools.genops(data):
            pass
    except Exception:
        return False
    return True


_COMPILED_FILE = re.compile(
    r"(?:__grp__)?(triton_\w+)\.(?:cubin|hsaco|json|ptx|ttir|ttgir|llir|amdgcn|source)"
)


def triton_kernels(data: bytes) -> tuple[int, int]:
    """An FX-graph entry's Triton kernels: (those whose compiled files it ships, those its generated code
    defines), read from the pickle's strings opcode by opcode (nothing loaded, any bundle's file may be read
    so). (0, 0) for an entry with no Triton kernel (a CPU's graph) or one that does not read as a pickle."""
    shipped: set[str] = set()
    defined: set[str] = set()
    try:
        for _, arg, _ in pickletools.genops(data):
            if not isinstance(arg, str):
                continue
            if "async_compile.triton(" in arg:
                defined.update(_DEFINED.findall(arg))
            elif found := _COMPILED_FILE.fullmatch(arg):
                shipped.add(found.group(1))
    except Exception:
        return 0, 0
    return len(shipped), len(defined)


def own_name(relative: str) -> str | None:
    """The key an FX-graph entry holds (Inductor pickles its own key into it) or a C++ object (its hash
    names its module): a file that does not hold it was put under a key not its own. (An AOTAutograd entry
    does not hold its own key.)"""
    parts = relative.split("/")
    if parts[0] == "fxgraph":
        return parts[2]
    if kind_of(relative) == "cpp":
        return parts[1].split(".")[0]
    return None


def install(stored: Iterable[tuple[model.Entry, BlobLookup]], cache_dir: Path) -> Placed:
    """Writes each stored graph file into `cache_dir` where none is, once checked; raises OSError for a
    directory that cannot be written."""
    placed = Placed()
    for entry, blob in stored:
        data, why = checked_file(entry, blob)
        target = cache_dir / str(entry.key[0])
        if data is not None and not target.exists() and kind_of(str(entry.key[0])) in PICKLED:
            why = None if whole_pickle(data) else f"{entry.key[0]}: damaged (not a whole pickle)"
            data = data if why is None else None  # read opcode by opcode where it would be written only
        if data is None:
            placed.refused.append(str(why))
            continue
        if place_new_file(target, data):
            placed.written += 1
            placed.files[str(entry.key[0])] = entry.artifacts[0].files[0].sha256
        else:
            placed.present += 1
    return placed


MAX_OBJECTS_LISTED = 10_000  # C++ objects looked at in Inductor's cache directory when a process ends


def objects_compiled_since(cache_dir: str, since: float, offered: frozenset[str]) -> list[str]:
    """The C++ objects (`*/*.so`, as Inductor's cache directory holds them) written there since `since`
    (time.time()) that no bundle offered: those Inductor compiled in this process (or in a process
    beside it). Their paths relative to `cache_dir`; the first MAX_OBJECTS_LISTED looked at."""
    import itertools

    root = Path(cache_dir)
    found = []
    for path in itertools.islice(root.glob("*/*.so"), MAX_OBJECTS_LISTED):
        relative = path.relative_to(root).as_posix()
        try:
            if relative not in offered and path.stat().st_mtime >= since:
                found.append(relative)
        except OSError:
            continue
    return sorted(found)


def graph_counts() -> dict[str, int]:
    """Inductor's own counts of this process's graph look-ups (0 where Inductor was not used)."""
    import sys

    utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(utils, "counters", None)
    if counters is None:
        return {}
    inductor, aot = counters.get("inductor", {}), counters.get("aot_autograd", {})
    moves = sys.modules.get("tuned_kernels.inductor_edge.graph_moves")
    return {
        "moved_to_this_gpu": len(moves.moved()) if moves is not None else 0,
        "fxgraph_hits": int(inductor.get("fxgraph_cache_hit", 0)),
        "fxgraph_misses": int(inductor.get("fxgraph_cache_miss", 0)),
        "fxgraph_bypassed": int(inductor.get("fxgraph_cache_bypass", 0)),
        "autograd_hits": int(aot.get("autograd_cache_hit", 0)),
        "autograd_misses": int(aot.get("autograd_cache_miss", 0)),
    }
