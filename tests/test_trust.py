"""Which bundles may serve code (compiled kernels, torch.compile graphs): installed bundle packages and
files no one but this user (or root) can write. Everything else serves its configs only. Checked on real
files and folders with real permission bits."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from tests import factories
from tuned_kernels.results import open_results, write_results
from tuned_kernels.results.provenance import provenance_of
from tuned_kernels.trust import Origin, Provenance, why_no_code

# (id, folder mode, file mode, may serve code)
MODES = [
    ("private-file-private-folder", 0o700, 0o600, True),
    ("readable-by-all", 0o755, 0o644, True),
    ("file-its-group-writes", 0o755, 0o664, False),
    ("file-every-user-writes", 0o755, 0o646, False),
    ("folder-its-group-writes", 0o775, 0o644, False),
    ("folder-every-user-writes", 0o777, 0o644, False),
    ("folder-every-user-writes-sticky", 0o1777, 0o644, True),  # as /tmp: others cannot replace the file
]


@pytest.mark.parametrize(("name", "folder_mode", "file_mode", "code"), MODES, ids=[m[0] for m in MODES])
def test_a_bundle_file_serves_code_only_when_no_one_else_can_write_it(
    tmp_path: Path, name: str, folder_mode: int, file_mode: int, code: bool
) -> None:
    folder = tmp_path / "bundles"
    folder.mkdir()
    bundle = folder / "app.pb.zst"
    bundle.write_bytes(b"")
    bundle.chmod(file_mode)
    folder.chmod(folder_mode)
    provenance = provenance_of(bundle, packaged=False, digest=None)
    assert (why_no_code(provenance) is None) == code, provenance
    if not code:
        assert provenance.origin is Origin.SHARED_FILE and str(folder) in str(provenance.writable_by_others)


def test_a_link_is_judged_by_the_file_it_names(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "app.pb.zst").write_bytes(b"")
    shared.chmod(0o777)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "app.pb.zst").symlink_to(shared / "app.pb.zst")
    assert why_no_code(provenance_of(private / "app.pb.zst", packaged=False, digest=None)) is not None


def test_a_file_that_cannot_be_checked_serves_no_code(tmp_path: Path) -> None:
    why = why_no_code(provenance_of(tmp_path / "gone.pb.zst", packaged=False, digest=None))
    assert why is not None and "cannot be checked" in why


def test_an_installed_bundle_package_serves_code_wherever_it_lives(tmp_path: Path) -> None:
    tmp_path.chmod(0o777)
    assert why_no_code(provenance_of(tmp_path / "any.pb.zst", packaged=True, digest=None)) is None
    assert why_no_code(Provenance(Origin.PACKAGE)) is None


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to give a file away")
def test_a_file_another_user_owns_serves_no_code(tmp_path: Path) -> None:
    bundle = tmp_path / "app.pb.zst"
    bundle.write_bytes(b"")
    os.chown(bundle, 12345, -1)
    why = why_no_code(provenance_of(bundle, packaged=False, digest=None))
    assert why is not None and "another user (uid 12345)" in why


@pytest.mark.parametrize("swapped", ["file", "link"])
def test_a_file_swapped_between_its_read_and_its_check_serves_no_code(tmp_path: Path, swapped: str) -> None:
    """The check names the file whose bytes were read: where the path names another file by then (a file
    moved over it, a link turned elsewhere), the bytes served are not those of the file checked."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    for name in ("read", "checked"):
        write_results(private / f"{name}.pb.zst", factories.results(factories.entry()))
    path = private / "app.pb.zst"
    if swapped == "link":
        path.symlink_to(private / "read.pb.zst")
    else:
        os.replace(private / "read.pb.zst", path)
    view = open_results(path)
    assert why_no_code(provenance_of(path, packaged=False, digest=None, read_from=view.read_from)) is None
    if swapped == "link":
        path.unlink()
        path.symlink_to(private / "checked.pb.zst")
    else:
        os.replace(private / "checked.pb.zst", path)
    why = why_no_code(provenance_of(path, packaged=False, digest=None, read_from=view.read_from))
    assert why is not None and "replaced while it was read" in why


def _signed_build(path: Path, built_at: str, private_key: bytes) -> None:
    """A results file built at `built_at`, signed beside it."""
    from tuned_kernels.results.digests import digest_of
    from tuned_kernels.signing import SUFFIX, sign

    results = factories.results(factories.entry())
    write_results(
        path, dataclasses.replace(results, header=dataclasses.replace(results.header, created_at=built_at))
    )
    Path(f"{path}{SUFFIX}").write_text(sign(path.name, *digest_of(path), private_key).to_json())


def test_an_older_build_signed_by_the_same_key_than_one_served_here_runs_no_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone who can replace a signed file puts back an older build its publisher signed: its code is not
    run. Newer builds, other names and other publishers are not held back by it."""
    from tuned_kernels.results.digests import digest_of
    from tuned_kernels.signing import new_key_pair

    monkeypatch.setenv("TUNED_KERNELS_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "bundles"
    folder.mkdir(mode=0o700)
    publisher, other = new_key_pair()[0], new_key_pair()[0]

    def why(name: str, built_at: str, key: bytes = publisher) -> str | None:
        path = folder / name
        _signed_build(path, built_at, key)
        provenance = provenance_of(path, packaged=False, digest=digest_of(path), built_at=built_at)
        return why_no_code(provenance)

    assert why("app.pb.zst", "2026-11-20T12:00:00Z") is None
    rolled_back = why("app.pb.zst", "2026-11-10T12:00:00Z")
    assert rolled_back is not None and "older than the build of 2026-11-20T12:00:00Z" in rolled_back
    assert why("other.pb.zst", "2026-11-10T12:00:00Z") is None  # another file name
    assert why("app.pb.zst", "2026-11-10T12:00:00Z", other) is None  # another publisher
    assert why("app.pb.zst", "2026-11-25T12:00:00Z") is None  # newer: served, and now the newest
    assert why("app.pb.zst", "2026-11-20T12:00:00Z") is not None
    path = folder / "app.pb.zst"  # a lock pins the build it names: not compared
    assert why_no_code(provenance_of(path, packaged=False, digest=digest_of(path), built_at=None)) is None
