"""Secrets of the settings: ``ANONSTREAM_<FIELD>_FILE`` sources, key strength and the production check.

Secrets (``fingerprint_key``, ``signing_key``, ``operator_token``, ``database_password``) are pydantic
``SecretStr`` values: never in logs, reprs or error messages. Production refuses a fingerprint or
signing key that is not a generated one (64+ hex digits or base64 of 32+ bytes that pass the randomness
tests of :func:`not_random`: no placeholder word, no symbol far too frequent, no long repeat; nor what a
password cracker finds: :mod:`stream.config.guessable`), a weak operator token (shorter than 24
characters, under 120 bits by its alphabet, not random or guessable), and any secret derived from
another (equal, re-encoded, hashed), saying how to generate one (:func:`check_production_secrets`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from pydantic_settings import EnvSettingsSource

from core.errors import ParamsError
from stream.config.names import ENV_PREFIX, accepted, environ

SECRET_FIELDS = ("fingerprint_key", "operator_token", "database_password", "signing_key")
MIN_TOKEN_CHARS = 24
MIN_TOKEN_BITS = 120
FALSE_REFUSAL = 1e-9  # chance that one test refuses a generated secret
HEX = "0123456789abcdefABCDEF"
CLASSES = (("abcdefghijklmnopqrstuvwxyz", 26), ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 26), ("0123456789", 10), ("-_", 2))
PLACEHOLDER_WORDS = ("replace", "example", "changeme", "password", "placeholder", "secretkey", "yourkey")
GENERATE_HINT = ("generate one with: anonstream keys generate (python -c 'import secrets; "
                 "print(secrets.token_hex(32))'); anonstream keys init --secrets-dir DIR writes every secret file")


def check_production_secrets(settings: Any, required: tuple[str, ...]) -> None:
    """Raise one :class:`ParamsError` naming every missing setting, else every weak secret."""
    missing = [f"{ENV_PREFIX}{n.upper()}" for n in required if getattr(settings, n) in (None, "")]
    if missing:
        raise ParamsError(f"production mode needs {', '.join(missing)} to be set ({GENERATE_HINT})",
                          reason="missing-setting")
    weak = []
    for name in ("fingerprint_key", "signing_key"):
        why = weak_key(secret_value(getattr(settings, name)) or "")
        if why:
            weak.append(f"{ENV_PREFIX}{name.upper()} {why}")
    signing = secret_value(settings.signing_key) or ""
    if not weak and not (len(signing) == 64 and all(c in HEX for c in signing)):
        weak.append(f"{ENV_PREFIX}SIGNING_KEY must be 64 hex digits (an Ed25519 seed)")
    token = secret_value(settings.operator_token)
    why = weak_token(token) if token is not None else None
    if why:
        weak.append(f"{ENV_PREFIX}OPERATOR_TOKEN {why}")
    if not weak:
        weak += _derived_pairs(settings)
    if weak:
        raise ParamsError(f"production mode refuses weak secrets: {'; '.join(weak)} ({GENERATE_HINT})",
                          reason="weak-secret")


def _derived_pairs(settings: Any) -> list[str]:
    """One line per pair of secrets that are one (equal, re-encoded, or one a hash of the other)."""
    from stream.config.guessable import derived

    values = [(n, secret_value(getattr(settings, n))) for n in ("fingerprint_key", "signing_key", "operator_token")]
    present = [(n, v) for n, v in values if v]
    return [f"{ENV_PREFIX}{b.upper()} is derived from {ENV_PREFIX}{a.upper()} (equal, re-encoded or hashed): each "
            "secret must be generated on its own" for i, (a, va) in enumerate(present) for b, vb in present[i + 1:]
            if derived(va, vb)]


class FileSettings(EnvSettingsSource):
    """``<NAME>_FILE=/run/secrets/x`` for any accepted variable name (``ANONSTREAM_FINGERPRINT_KEY_FILE``,
    ``ANONSTREAM_PRIVACY__K_FILE``, ``ANONSTREAM_K_FILE``, ...): the setting's value is that file's
    content, stripped (Docker and Kubernetes secrets). A variable set directly wins over its ``_FILE`` form."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        env, out = environ(), {}
        for name, target in accepted(self.settings_cls).items():
            path = env.get(f"{name}_FILE")
            if not path or target in out:
                continue
            try:
                out[target] = Path(path).read_text().strip()
            except OSError as exc:
                raise ParamsError(f"{name}_FILE: cannot read {path} ({exc.strerror})",
                                  reason="invalid-setting") from None
        return out


def weak_key(text: str) -> str | None:
    """Why ``text`` is not a generated key of at least 32 random bytes (64+ hex digits, or base64 /
    base64url of 32+ bytes: ``keys generate``, ``token_hex(32)``, ``token_urlsafe(32)``), None if it is."""
    hexa = len(text) >= 64 and all(c in HEX for c in text)
    if not hexa and len(_b64(text) or b"") < 32:
        return "is not 32 random bytes (64 hex digits or base64)"
    return not_random(text.lower() if hexa else text.rstrip("="), 16 if hexa else 64) or _guessed(text)


def weak_token(text: str) -> str | None:
    """Why ``text`` is not a strong operator token (``token_urlsafe(32)``), None if it is."""
    if len(text) < MIN_TOKEN_CHARS:
        return f"is shorter than {MIN_TOKEN_CHARS} characters"
    alphabet = sum(n for chars, n in CLASSES if any(c in chars for c in text)) + \
        (32 if any(not any(c in chars for chars, _ in CLASSES) for c in text) else 0)
    if len(text) * math.log2(max(alphabet, 2)) < MIN_TOKEN_BITS:
        return f"has fewer than {MIN_TOKEN_BITS} bits of entropy"
    return not_random(text, max(alphabet, 2)) or _guessed(text)


def _guessed(text: str) -> str | None:
    """A hash of a common password, or what a password cracker finds (:mod:`stream.config.guessable`)."""
    from stream.config.guessable import guessable, hashed_password

    if hashed_password(text):
        return "is the hash of a common password"
    return guessable(text)


def not_random(text: str, alphabet: int) -> str | None:
    """Why ``text`` cannot be ``len(text)`` symbols drawn uniformly from ``alphabet`` ones, None if it can.

    Each test refuses a random string with a probability below :data:`FALSE_REFUSAL` (a union bound):
    a placeholder word, one symbol far too frequent (``'0' * 32 + ...``), a long repeated substring
    (``'Password1' * 6``). A generated key is refused about once in a billion: generate another."""
    n, low = len(text), text.lower()
    word = next((w for w in PLACEHOLDER_WORDS if w in low), None)
    if word:
        return f"is a placeholder (contains {word!r})"
    top = max(text.count(c) for c in set(text))
    if alphabet * _tail(n, top, 1 / alphabet) < FALSE_REFUSAL:
        return "is not random (one character repeats too often)"
    span = _longest_repeat(text)
    if span and n * n / 2 * alphabet ** -span < FALSE_REFUSAL:
        return f"is not random (a run of {span} characters repeats)"
    return None


def _tail(n: int, x: int, p: float) -> float:
    """P(Binomial(n, p) >= x)."""
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(x, n + 1))


def _longest_repeat(text: str) -> int:
    """Length of the longest substring that occurs twice in ``text`` (the occurrences may overlap)."""
    best = 0
    for size in range(1, len(text)):
        seen = {text[i:i + size] for i in range(len(text) - size + 1)}
        if len(seen) == len(text) - size + 1:
            return best
        best = size
    return best


def _b64(text: str) -> bytes | None:
    import base64
    import binascii

    try:
        return base64.b64decode(text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def secret_value(secret: SecretStr | None) -> str | None:
    """The value of a secret setting, None when unset or empty."""
    return secret.get_secret_value() or None if secret is not None else None
