"""``anonstream keys``: the manifest signing key's public half, and fresh secrets."""

from __future__ import annotations

import argparse
import secrets
from pathlib import Path

KEYS_HELP = """\
Keys of the service.

  public     print the Ed25519 public key (64 hex digits) that verifies the service's release
             manifests; give it to analysts for `anonstream consume --public-key`. It is derived
             from ANONSTREAM_SIGNING_KEY, or in embedded mode from DATA_DIR/signing.key, which the
             service creates on its first start (`anonstream run` or `demo`); `keys public` never
             creates one. The demo's key is under var/demo: ANONSTREAM_HOME=var/demo anonstream keys public
  generate   print a fresh secret of 32 random bytes as 64 hex digits, fit for
             ANONSTREAM_SIGNING_KEY or ANONSTREAM_FINGERPRINT_KEY (the same as
             python -c 'import secrets; print(secrets.token_hex(32))').

Example:
  ANONSTREAM_SIGNING_KEY=$(anonstream keys generate) anonstream keys public
"""


def cmd_keys(args: argparse.Namespace) -> int:
    if args.action == "generate":
        print(secrets.token_hex(32))
        return 0
    from core.errors import ParamsError
    from stream.config.settings import load_settings, secret_value
    from stream.wire.signing import load_private_key, public_bytes

    settings = load_settings()
    secret = secret_value(settings.signing_key)
    if not secret and settings.mode != "production" and not (settings.data_dir / "signing.key").exists():
        demo = " (the demo's is under var/demo: ANONSTREAM_HOME=var/demo anonstream keys public)" \
            if (Path("var") / "demo" / "signing.key").exists() else ""
        raise ParamsError(f"no signing key in {settings.data_dir.resolve()}: the service creates it on its first start "
                          f"(`anonstream run`){demo}; in production set ANONSTREAM_SIGNING_KEY",
                          reason="missing-setting")
    key = load_private_key(secret, settings.data_dir, settings.mode == "production")
    print(public_bytes(key.public_key()).hex())
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("keys", help="print the public key analysts verify releases with, or a new secret",
                       description=KEYS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=["public", "generate"], help="public | generate")
    p.set_defaults(func=cmd_keys)
