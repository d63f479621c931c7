"""Production refuses secrets that were not generated, and says how to generate one (stream/config/secrets.py)."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from pydantic import SecretStr

from core.errors import ParamsError
from stream.config.secrets import weak_key, weak_token
from stream.config.settings import Settings

BASE: dict[str, Any] = {"mode": "production", "broker_url": "kafka://k:9092", "database_url": "postgresql://x/y"}
HALF_ZEROS = "0" * 32 + "7cf34dcf1b9a8e0257d6c4ab39f1e8d2"
PLACEHOLDER = "REPLACE_ME_WITH_A_SECRET_KEY_OF_64_HEX_DIGITS_0123456789abcdef"


@pytest.mark.parametrize(("value", "says"), [
    ("Password1" * 6, "is a placeholder"),
    ("correcthorsebatterystaple" * 2, "is not random"),
    (PLACEHOLDER, "is a placeholder"),
    (HALF_ZEROS, "is not random"),
    (HALF_ZEROS[32:] + HALF_ZEROS[:32], "is not random"),
    ("deadbeef" * 8, "is not random"),
    ("a", "is not 32 random bytes"),
])
def test_keys_that_were_not_generated_are_refused(value: str, says: str) -> None:
    for field in ("fingerprint_key", "signing_key"):
        keys: dict[str, Any] = {"fingerprint_key": secrets.token_hex(32), "signing_key": secrets.token_hex(32),
                                field: value}
        with pytest.raises(ParamsError, match=f"ANONSTREAM_{field.upper()} {says}") as err:
            Settings(**BASE, **keys)
        assert "anonstream keys generate" in str(err.value) and "keys init" in str(err.value)
        assert len(value) < 8 or value not in str(err.value)  # a secret is never echoed


def test_the_signing_key_must_not_be_the_fingerprint_key() -> None:
    key = secrets.token_hex(32)
    with pytest.raises(ParamsError, match="SIGNING_KEY is derived from ANONSTREAM_FINGERPRINT_KEY"):
        Settings(**BASE, fingerprint_key=SecretStr(key), signing_key=SecretStr(key.upper()))


@pytest.mark.parametrize(("token", "says"), [
    ("a" * 24, "OPERATOR_TOKEN has fewer than 120 bits"),
    ("ab" * 30, "OPERATOR_TOKEN is not random"),
    ("Password1" * 4, "OPERATOR_TOKEN is a placeholder"),
    ("short-token", "OPERATOR_TOKEN is shorter than 24"),
])
def test_weak_operator_tokens_are_refused(token: str, says: str) -> None:
    with pytest.raises(ParamsError, match=says):
        Settings(**BASE, fingerprint_key=SecretStr(secrets.token_hex(32)), signing_key=SecretStr(secrets.token_hex(32)),
                 operator_token=SecretStr(token))


def test_generated_secrets_pass() -> None:
    """The formats `keys init` and `keys generate` write (and token_urlsafe(32), which the docs once gave for the
    fingerprint key) all pass; each test refuses a generated secret about once in a billion. 50 of each
    (each costs a password-strength estimate: 300 took 21 CPU-s); tests/stream/config/test_guessable.py
    samples more of the estimator alone."""
    for _ in range(50):
        assert weak_key(secrets.token_hex(32)) is None
        assert weak_key(secrets.token_urlsafe(32)) is None
        assert weak_token(secrets.token_urlsafe(32)) is None
        assert weak_token(secrets.token_urlsafe(18)) is None  # 24 characters
    ok = Settings(**BASE, fingerprint_key=SecretStr(secrets.token_urlsafe(32)),
                  signing_key=SecretStr(secrets.token_hex(32)),
                  operator_token=SecretStr(secrets.token_urlsafe(32)))
    assert ok.mode == "production"
