"""Secrets a guesser finds are refused in production: keyboard walks, passphrases, hashes of common
passwords, one secret derived from another; generated ones pass."""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Any

import pytest

from core.errors import ParamsError
from stream.config.guessable import derived, guessable, hashed_password
from stream.config.secrets import weak_key, weak_token
from stream.config.settings import Settings

WALK = "qwertyuiopasdfghjklzxcvbnmQWERTYUIOPASDFGHJKLZXCVBNM1234567890ab"
PASSPHRASE = "correct-horse-battery-staple-orange-window-purple-monkey-dishwasher"


@pytest.mark.parametrize(("text", "check"), [
    (WALK, weak_key), ("1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik9ol0p1qaz2wsx3edc4rfv5tgb6yhn7ujm", weak_key),
    (PASSPHRASE, weak_token), ("this-is-my-very-long-operator-token-for-prod", weak_token),
    (hashlib.sha256(b"password").hexdigest(), weak_key), (hashlib.sha512(b"letmein").hexdigest(), weak_key),
])
def test_what_a_guesser_finds_is_refused(text: str, check: object) -> None:
    assert callable(check) and check(text) is not None


def test_generated_secrets_pass() -> None:
    """A sample of what `keys generate` / `keys init` write (the module docstring has the wider count)."""
    for _ in range(60):
        for key in (secrets.token_hex(32), base64.b64encode(secrets.token_bytes(32)).decode()):
            assert weak_key(key) is None, key
        token = secrets.token_urlsafe(32)
        assert weak_token(token) is None and guessable(token) is None, token
    assert not hashed_password(secrets.token_hex(32))


def test_one_secret_derived_from_another() -> None:
    raw = secrets.token_bytes(32)
    assert derived(raw.hex(), base64.b64encode(raw).decode())  # the same bytes, encoded otherwise
    assert derived(raw.hex(), raw.hex().upper())
    assert derived(raw.hex(), hashlib.sha256(raw).hexdigest())  # a hash of the other's bytes
    assert derived(raw.hex(), hashlib.sha256(raw.hex().encode()).hexdigest())  # of its text
    assert not derived(secrets.token_hex(32), secrets.token_hex(32))


BASE: dict[str, Any] = {"mode": "production", "broker_url": "kafka://k:9092", "database_url": "postgresql://x/y"}


def _production(**secrets_: str) -> Settings:
    """Production settings (their secrets are checked when they are read)."""
    base: dict[str, Any] = {"fingerprint_key": secrets.token_hex(32), "signing_key": secrets.token_hex(32),
            "operator_token": secrets.token_urlsafe(32), **secrets_}
    return Settings(**BASE, **base)


def test_production_refuses_derived_keys_and_a_token_that_is_a_key() -> None:
    _production()
    signing = secrets.token_hex(32)
    b64 = base64.b64encode(bytes.fromhex(signing)).decode()
    for bad, words in [({"signing_key": signing, "fingerprint_key": b64}, "derived from"),
                       ({"signing_key": signing, "operator_token": signing}, "derived from"),
                       ({"fingerprint_key": hashlib.sha256(b"password").hexdigest()}, "common password"),
                       ({"fingerprint_key": WALK}, "not random")]:
        with pytest.raises(ParamsError, match=words):
            _production(**bad)
