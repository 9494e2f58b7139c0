"""Signed bundles. A signature file beside a results file (`app.pb.zst.sig`, JSON) names the file, its
size and sha256, and the publisher's Ed25519 public key, and holds that key's signature over those fields:
the compiled kernels and graphs inside a results file are its bytes, so its digest covers every blob it
ships. A file renamed, edited, truncated or extended no longer matches; a signature file edited no longer
verifies. Ed25519 through `cryptography` (the `sign` extra), imported only when a signature is made or
checked: the curve arithmetic is the one thing here not to write by hand.

Keys are written `ed25519:<base64 of the 32-byte public key>`; `TUNED_KERNELS_TRUSTED_KEYS` lists them
(or files holding them), comma-separated."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from tuned_kernels.errors import TunedKernelsError, one_line

FORMAT = "tuned-kernels-signature"
VERSION = 1
SUFFIX = ".sig"
KEY_PREFIX = "ed25519:"
MAX_SIGNATURE_BYTES = 64 * 1024
_FIELDS = ("file", "size", "sha256", "key", "signature")
UNCHECKABLE = "its signature cannot be checked here: pip install 'tuned-kernels[sign]'"


class SignatureError(TunedKernelsError):
    """A signature, key or key file that cannot be read, or does not verify."""


@dataclass(frozen=True)
class Signature:
    file: str  # the results file's name (no folder: the pair travels together)
    size: int
    sha256: str
    key: str  # ed25519:<base64>
    signature: str  # base64 of the 64-byte Ed25519 signature over `message()`

    def message(self) -> bytes:
        signed = {"format": FORMAT, "version": VERSION, "file": self.file, "size": self.size,
                  "sha256": self.sha256, "key": self.key}  # fmt: skip
        return json.dumps(signed, sort_keys=True, separators=(",", ":")).encode()

    def to_json(self) -> str:
        fields = {"format": FORMAT, "version": VERSION, **{name: getattr(self, name) for name in _FIELDS}}
        return json.dumps(fields, indent=1) + "\n"

    @staticmethod
    def from_json(text: str | bytes) -> Signature:
        try:
            data: Any = json.loads(text)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise SignatureError(f"not JSON ({one_line(str(exc), 80)})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
            raise SignatureError(f"not a {FORMAT} of version {VERSION}")
        types = {"file": str, "size": int, "sha256": str, "key": str, "signature": str}
        for name, kind in types.items():
            if type(data.get(name)) is not kind:
                raise SignatureError(f"field {name}: expected {kind.__name__}")
        return Signature(*(data[name] for name in _FIELDS))


def public_key_bytes(text: str) -> bytes:
    """The 32 raw bytes of a key written `ed25519:<base64>`."""
    if not text.startswith(KEY_PREFIX):
        raise SignatureError(f"{one_line(text, 60)}: not a key (expected {KEY_PREFIX}<base64>)")
    try:
        raw = base64.b64decode(text[len(KEY_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError(f"{one_line(text, 60)}: not base64") from None
    if len(raw) != 32:
        raise SignatureError(f"{one_line(text, 60)}: an Ed25519 public key has 32 bytes, not {len(raw)}")
    return raw


def key_text(raw: bytes) -> str:
    return KEY_PREFIX + base64.b64encode(raw).decode()


def short(key: str) -> str:
    """A key as a person reads it: its first characters."""
    return key[: len(KEY_PREFIX) + 12] + "…"


def new_key_pair() -> tuple[bytes, str]:
    """A new private key (PEM, unencrypted) and its public key's text."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return pem, key_text(public)


def sign(file_name: str, size: int, sha256: str, private_pem: bytes) -> Signature:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        private = serialization.load_pem_private_key(private_pem, password=None)
    except (ValueError, TypeError) as exc:
        raise SignatureError(f"not an unencrypted PEM private key ({one_line(str(exc), 80)})") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise SignatureError("not an Ed25519 private key")
    public = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    unsigned = Signature(file_name, size, sha256, key_text(public), "")
    signed = base64.b64encode(private.sign(unsigned.message())).decode()
    return Signature(file_name, size, sha256, unsigned.key, signed)


def why_not_valid(signature: Signature, file_name: str, size: int, sha256: str) -> str | None:
    """Why `signature` does not vouch for the file `file_name` of `size` bytes and this sha256 (None: it
    does)."""
    if signature.file != file_name:
        return f"it signs {one_line(signature.file, 60)}, not this file"
    if signature.size != size or signature.sha256 != sha256:
        return "the file changed since it was signed"
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError:
        return UNCHECKABLE
    try:
        key = Ed25519PublicKey.from_public_bytes(public_key_bytes(signature.key))
        key.verify(base64.b64decode(signature.signature, validate=True), signature.message())
    except (SignatureError, InvalidSignature, binascii.Error, ValueError):
        return "its signature does not verify"
    return None
