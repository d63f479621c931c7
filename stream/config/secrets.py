"""Secrets of the settings: ``ANONSTREAM_<FIELD>_FILE`` sources, key strength and the production check.

Secrets (``fingerprint_key``, ``signing_key``, ``operator_token``, ``database_password``) are pydantic
``SecretStr`` values: never in logs, reprs or error messages. Production refuses a fingerprint or
signing key of fewer than 32 random bytes and an operator token shorter than 24 characters, saying how
to generate a key (:func:`check_production_secrets`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from pydantic_settings import EnvSettingsSource

from core.errors import ParamsError
from stream.config.names import ENV_PREFIX, accepted, environ

SECRET_FIELDS = ("fingerprint_key", "operator_token", "database_password", "signing_key")
MIN_TOKEN_CHARS = 24
GENERATE_HINT = "generate one with: python -c 'import secrets; print(secrets.token_hex(32))'"


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
    if not weak and not (len(signing) == 64 and all(c in "0123456789abcdefABCDEF" for c in signing)):
        weak.append(f"{ENV_PREFIX}SIGNING_KEY must be 64 hex digits (an Ed25519 seed)")
    token = secret_value(settings.operator_token)
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        weak.append(f"{ENV_PREFIX}OPERATOR_TOKEN is shorter than {MIN_TOKEN_CHARS} characters")
    if weak:
        raise ParamsError(f"production mode refuses weak secrets: {'; '.join(weak)} ({GENERATE_HINT})",
                          reason="weak-secret")


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
    """Why ``text`` is not a key of at least 32 random bytes (64+ hex digits, or base64), None if it is."""
    raw: bytes | None = None
    if len(text) >= 64 and all(c in "0123456789abcdefABCDEF" for c in text):
        raw = bytes.fromhex(text[: len(text) // 2 * 2])
    else:
        import base64
        import binascii

        try:
            raw = base64.b64decode(text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4), validate=True)
        except (binascii.Error, ValueError):
            raw = None
    if raw is None or len(raw) < 32:
        return "is not 32 random bytes (64 hex digits or base64)"
    if len(set(raw)) < 16:  # 32 random bytes have about 30 distinct values; fewer than 16 is not random
        return "is not random (too few distinct bytes)"
    return None


def secret_value(secret: SecretStr | None) -> str | None:
    """The value of a secret setting, None when unset or empty."""
    return secret.get_secret_value() or None if secret is not None else None
