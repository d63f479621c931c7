"""Signed manifests: the worker signs each manifest with Ed25519; analysts verify with the public key.

The manifest's ``checksum`` covers every record of the release (SHA-256 over their canonical JSON in
``seq`` order), and the signature covers the manifest, so a consumer holding the service's *public*
key accepts a release only if the service produced it; it cannot forge one (an unkeyed checksum
alone can be recomputed by anyone who can write to the topic).

* The private key is a secret setting, ``ANONSTREAM_SIGNING_KEY``: 32 random bytes as 64 hex digits
  (``python -c 'import secrets; print(secrets.token_hex(32))'``). In embedded mode a missing key is
  generated once into ``data_dir/signing.key`` (like ``fingerprint.key``).
* ``anonstream keys public`` prints the public key (64 hex digits) to hand to analysts; ``consume``
  takes it as ``--public-key`` or ``ANONSTREAM_RELEASE_PUBLIC_KEY``.
* The signature is the manifest field ``signature``: ``{"alg": "ed25519", "key_id": <first 16 hex
  digits of SHA-256 of the public key>, "value": <base64 signature>}`` over :func:`signed_bytes`,
  the canonical JSON of the manifest without that field.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import os
import secrets
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from core.errors import ParamsError

ALG = "ed25519"
GENERATE_HINT = "python -c 'import secrets; print(secrets.token_hex(32))'"


def signed_bytes(manifest: dict[str, Any]) -> bytes:
    """The bytes a signature covers: canonical JSON of the manifest minus its ``signature``."""
    body = {k: v for k, v in manifest.items() if k != "signature"}
    return json.dumps(body, separators=(",", ":"), sort_keys=True, ensure_ascii=True).encode()


def key_id(public: Ed25519PublicKey) -> str:
    return hashlib.sha256(public_bytes(public)).hexdigest()[:16]


def public_bytes(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw)


def private_key_from_hex(text: str, name: str = "ANONSTREAM_SIGNING_KEY") -> Ed25519PrivateKey:
    """An Ed25519 private key from 64 hex digits (its 32-byte seed)."""
    try:
        seed = bytes.fromhex(text.strip())
    except ValueError:
        seed = b""
    if len(seed) != 32:
        raise ParamsError(f"{name} must be 64 hex digits (32 random bytes); generate one with {GENERATE_HINT}",
                          reason="invalid-setting")
    return Ed25519PrivateKey.from_private_bytes(seed)


def public_key_from_text(text: str) -> Ed25519PublicKey:
    """A public key from 64 hex digits, or ``@path`` to a file holding them."""
    text = text.strip()
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text().strip()
        except OSError as exc:
            raise ParamsError(f"cannot read the public key file {text[1:]}: {exc.strerror}",
                              reason="invalid-setting") from None
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise ParamsError("the release public key must be 64 hex digits (see `anonstream keys public`)",
                          reason="invalid-setting")
    return Ed25519PublicKey.from_public_bytes(raw)


def load_private_key(secret: str | None, data_dir: Path, production: bool) -> Ed25519PrivateKey:
    """The configured signing key; in embedded mode generated once under ``data_dir`` when not configured."""
    if secret:
        return private_key_from_hex(secret)
    if production:
        raise ParamsError(f"production mode needs ANONSTREAM_SIGNING_KEY (generate one with {GENERATE_HINT})",
                          reason="missing-setting")
    path = data_dir / "signing.key"
    if not path.exists():  # created atomically: concurrent workers on one data folder get the same key
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".signing.key.{os.getpid()}.{secrets.token_hex(4)}")
        tmp.write_text(secrets.token_hex(32))
        tmp.chmod(0o600)
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
        tmp.unlink()
    return private_key_from_hex(path.read_text(), str(path))


def sign_manifest(manifest: dict[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    """A copy of ``manifest`` with its ``signature``."""
    value = base64.b64encode(key.sign(signed_bytes(manifest))).decode()
    return {**{k: v for k, v in manifest.items() if k != "signature"},
            "signature": {"alg": ALG, "key_id": key_id(key.public_key()), "value": value}}


def verify_manifest(manifest: dict[str, Any], public: Ed25519PublicKey) -> str | None:
    """None if the manifest carries a valid signature by ``public``; else why it is refused."""
    sig = manifest.get("signature")
    if not isinstance(sig, dict):
        return "unsigned manifest"
    if sig.get("alg") != ALG:
        return f"unsupported signature algorithm {str(sig.get('alg'))[:20]!r}"
    if sig.get("key_id") != key_id(public):
        return "signed by another key"
    try:
        raw = base64.b64decode(str(sig.get("value", "")), validate=True)
        public.verify(raw, signed_bytes(manifest))
    except (InvalidSignature, binascii.Error, ValueError):
        return "bad signature (forged or altered manifest)"
    return None


def consumer_public_key(explicit: str | None, signing_secret: str | None, data_dir: Path) -> Ed25519PublicKey:
    """The key a consumer verifies with: ``explicit`` (hex or ``@file``), else the public half of the
    configured signing key, else of the embedded one under ``data_dir`` (same machine as the worker)."""
    if explicit:
        return public_key_from_text(explicit)
    if signing_secret:
        return private_key_from_hex(signing_secret).public_key()
    path = data_dir / "signing.key"
    if path.exists():
        return private_key_from_hex(path.read_text(), str(path)).public_key()
    raise ParamsError("no public key to verify releases with: pass --public-key HEX (the service operator "
                      "prints it with `anonstream keys public`) or set ANONSTREAM_RELEASE_PUBLIC_KEY",
                      reason="missing-setting")
