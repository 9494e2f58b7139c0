"""Who built the bundles and which bytes they are: `keygen`, `sign`, `verify` (`build-wheel --sign-key`
signs the bundles it packs) and `lock`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from tuned_kernels.cli.parsing import command, json_option
from tuned_kernels.errors import TunedKernelsError, one_line


def add_keygen(sub: Any) -> None:
    p = command(
        sub,
        "keygen",
        "make an Ed25519 key pair for signing bundles",
        "Writes the private key to KEY (PEM, readable by you only) and the public key to KEY.pub\n"
        "(ed25519:<base64>): give KEY.pub, or its one line, to the machines that serve your bundles\n"
        "(TUNED_KERNELS_TRUSTED_KEYS).",
        "  tuned-kernels keygen -o publisher.key",
        cmd_keygen,
    )
    p.add_argument("-o", "--output", required=True, metavar="KEY", help="the private key file to write")
    json_option(p, "the files written and the public key")


def cmd_keygen(args: argparse.Namespace) -> int:
    from tuned_kernels.signing import new_key_pair

    private = Path(args.output)
    if private.exists():
        raise TunedKernelsError(f"{private}: exists already; not replaced")
    pem, public = new_key_pair()
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    Path(f"{private}.pub").write_text(public + "\n")
    if args.json:
        print(json.dumps({"private": str(private), "public_file": f"{private}.pub", "public": public}))
    else:
        print(f"private key -> {private}; public key -> {private}.pub: {public}")
    return 0


def add_sign(sub: Any) -> None:
    p = command(
        sub,
        "sign",
        "sign results files: a FILE.sig beside each",
        "Each signature names its file, size and sha256 (the compiled kernels and graphs inside are its\n"
        "bytes) and the signing key. A machine whose TUNED_KERNELS_TRUSTED_KEYS names the key serves the\n"
        "file's compiled kernels and graphs; a file changed since it was signed serves its configs only.",
        "  tuned-kernels sign --key publisher.key app.pb.zst",
        cmd_sign,
    )
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results files to sign")
    p.add_argument("--key", required=True, metavar="KEY", help="the private key (tuned-kernels keygen)")
    json_option(p, "each signature written")


def cmd_sign(args: argparse.Namespace) -> int:
    from tuned_kernels.results.digests import digest_of
    from tuned_kernels.results.files import write_atomic
    from tuned_kernels.signing import SUFFIX, short, sign

    private = Path(args.key).read_bytes()
    written = []
    for name in args.results:
        path = Path(name)
        size, sha256 = digest_of(path)
        signature = sign(path.name, size, sha256, private)
        write_atomic(Path(f"{path}{SUFFIX}"), signature.to_json().encode())
        written.append({"file": str(path), "signature": f"{path}{SUFFIX}", "key": signature.key})
        if not args.json:
            print(f"signed {path} -> {path}{SUFFIX} (key {short(signature.key)})")
    if args.json:
        print(json.dumps(written))
    return 0


def add_verify(sub: Any) -> None:
    p = command(
        sub,
        "verify",
        "check that results files are signed, unchanged, by a key you trust",
        "Checks each file against its FILE.sig and, with --key, that the signing key is one of those given\n"
        "(keys or key files, comma-separated, as TUNED_KERNELS_TRUSTED_KEYS takes them). A bundle wheel or\n"
        "an installed bundle's folder: each results file in it. Exit status 1 at the first that fails.",
        "  tuned-kernels verify --key publisher.key.pub app.pb.zst\n"
        "  tuned-kernels verify --key ed25519:... dist/acme_tuned_sm90-1.0-py3-none-any.whl",
        cmd_verify,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="results files, folders or bundle wheels")
    p.add_argument("--key", default=None, metavar="KEYS", help="keys or key files the signer must be among")
    json_option(p, "each file's signer")


def cmd_verify(args: argparse.Namespace) -> int:
    from tuned_kernels.registry.settings import trusted_keys
    from tuned_kernels.results.locate import results_files_given
    from tuned_kernels.results.provenance import signature_of
    from tuned_kernels.signing import short

    trusted = trusted_keys(args.key) if args.key else None
    if args.key and not trusted:
        raise TunedKernelsError(
            f"--key {one_line(args.key, 80)}: no key (ed25519:<base64>) nor a file holding one"
        )
    checked = []
    for path in _files(args.paths, results_files_given):
        signer, problem = signature_of(path)
        if problem is None and signer is None:
            problem = "not signed (no .sig beside it)"
        if problem is None and trusted is not None and signer not in trusted:
            problem = f"signed by {short(str(signer))}, not a key --key names"
        if problem is not None:
            raise TunedKernelsError(f"{path}: {problem}")
        checked.append({"file": str(path), "signer": signer})
    print(
        json.dumps(checked)
        if args.json
        else "\n".join(f"ok  {c['file']}  signed by {c['signer']}" for c in checked)
    )
    return 0


def _files(paths: list[str], given: Any) -> list[Path]:
    """The results files of these paths; a wheel's, with their signatures, copied to a folder first."""
    import tempfile

    from tuned_kernels.results.inspected import wheel_bundle_files

    files: list[Path] = []
    for text in paths:
        if text.endswith(".whl"):
            folder = Path(tempfile.mkdtemp(prefix="tuned-kernels-verify-"))
            for name, data in wheel_bundle_files(Path(text)):
                (folder / Path(name).name).write_bytes(data)
            files += given([str(folder)])
        else:
            files += given([text])
    if not files:
        raise TunedKernelsError(f"no results files in {', '.join(paths)}")
    return files


def add_lock(sub: Any) -> None:
    p = command(
        sub,
        "lock",
        "pin the bundles this environment serves: their exact bytes",
        "Writes the size and sha256 of every bundle file found here (installed bundle packages and\n"
        "TUNED_KERNELS_PATH). With TUNED_KERNELS_LOCK=FILE set, a program serves only files of those exact\n"
        "bytes; any other is left out, said once: a deployment serves what its CI tested.",
        "  tuned-kernels lock -o tuned-kernels.lock\n"
        "  TUNED_KERNELS=1 TUNED_KERNELS_LOCK=tuned-kernels.lock python app.py",
        cmd_lock,
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the lock file to write")
    json_option(p, "the bundles locked")


def cmd_lock(args: argparse.Namespace) -> int:
    from tuned_kernels.results.digests import digest_of
    from tuned_kernels.results.discovery import discover
    from tuned_kernels.results.files import write_atomic
    from tuned_kernels.results.lock import Locked, lock_text

    found = discover()
    for problem in found.problems:
        print(f"tuned-kernels lock: {problem}", file=sys.stderr)
    locked = [Locked(f.source, f.path.name, *digest_of(f.path)) for f in found.files]
    write_atomic(Path(args.output), lock_text(locked).encode())
    if args.json:
        print(json.dumps([vars(b) for b in locked]))
    else:
        print(f"locked {len(locked)} bundle files -> {args.output}")
    return 0


def add_commands(sub: Any) -> None:
    add_keygen(sub)
    add_sign(sub)
    add_verify(sub)
    add_lock(sub)
