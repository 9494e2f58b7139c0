"""A signed bundle built before one this machine already served, under the same signer and file name, is a
rollback: someone who can replace the file put back an older build its publisher signed (one whose kernel
was since fixed, say). Its code is not run (its configs are, as any bundle's), said once. The newest build
served per signer and file name is kept in the user's cache folder (`signed-builds.json`, written under a
lock, atomically). A build chosen on purpose is pinned with TUNED_KERNELS_LOCK instead (a locked file is
served as locked), or that record is removed. A build time is the header's `created_at`, inside the signed
bytes: it cannot be changed without the publisher's key."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from tuned_kernels.whole_match import matches, whole

RECORD = "signed-builds.json"
MAX_RECORD_BYTES = 1 << 20
MAX_BUILDS = 1000  # the record keeps the builds served most lately
LOCK_SECONDS = 2.0
BUILT_AT = whole(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")  # RFC 3339 UTC to the second: ordered as text


def why_rolled_back(signer: str, file_name: str, built_at: str, folder: Path) -> str | None:
    """Why this signed build must not run its code: an older build than one served here before under this
    signer and name (None: it is that build or newer, and is then remembered as the newest)."""
    if not matches(BUILT_AT, built_at):
        return None  # a time in no known form: nothing to compare (the publisher signed it as it is)
    name = f"{signer} {file_name}"
    newest = _read(folder).get(name)
    if newest is not None and built_at < newest:
        return (
            f"it is a build of {built_at}, older than the build of {newest} this machine served from a file "
            f"of this name signed by the same key (a rollback; TUNED_KERNELS_LOCK pins a chosen build)"
        )
    if newest != built_at:
        _remember(folder, name, built_at)
    return None


def _read(folder: Path) -> dict[str, str]:
    from tuned_kernels.results.files import read_regular_file

    try:
        data = json.loads(read_regular_file(str(folder / RECORD), MAX_RECORD_BYTES))
    except Exception:  # none yet, or unreadable: nothing to compare with
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and matches(BUILT_AT, v)}


def _remember(folder: Path, name: str, built_at: str) -> None:
    from filelock import FileLock, Timeout

    from tuned_kernels.results.files import write_atomic

    with contextlib.suppress(OSError, Timeout):  # not remembered: the next start compares with less
        folder.mkdir(parents=True, exist_ok=True)
        with FileLock(str(folder / f"{RECORD}.lock"), timeout=LOCK_SECONDS):
            builds = _read(folder)
            if builds.get(name, "") >= built_at:
                return
            builds.pop(name, None)
            builds[name] = built_at  # last: the most lately served
            kept = dict(list(builds.items())[-MAX_BUILDS:])
            write_atomic(folder / RECORD, json.dumps(kept, indent=1).encode())
