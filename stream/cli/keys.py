"""``anonstream keys``: the manifest signing key's public half, fresh secrets, and the secret files of
the compose stack (``keys init``)."""

from __future__ import annotations

import argparse
import os
import secrets
from collections.abc import Callable
from pathlib import Path

# every secret file docker-compose.yml mounts, and how each is generated (its required format)
SECRET_FILES: dict[str, tuple[Callable[[], str], str]] = {
    "postgres_password": (lambda: secrets.token_urlsafe(32), "PostgreSQL password (43 base64url characters)"),
    "fingerprint_key": (lambda: secrets.token_hex(32), "ANONSTREAM_FINGERPRINT_KEY (64 hex digits)"),
    "signing_key": (lambda: secrets.token_hex(32), "ANONSTREAM_SIGNING_KEY, the Ed25519 seed (64 hex digits)"),
    "operator_token": (lambda: secrets.token_urlsafe(32), "ANONSTREAM_OPERATOR_TOKEN (43 base64url characters)"),
    "grafana_admin_password": (lambda: secrets.token_urlsafe(24), "Grafana's admin password"),
}

KEYS_HELP = """\
Keys of the service.

  public     print the Ed25519 public key (64 hex digits) that verifies the service's release
             manifests; give it to analysts for `anonstream consume --public-key`. It is derived
             from ANONSTREAM_SIGNING_KEY, or in embedded mode from DATA_DIR/signing.key, which the
             service creates on its first start (`anonstream run` or `demo`); `keys public` never
             creates one. The demo's key is under var/demo: ANONSTREAM_HOME=var/demo anonstream keys public
  init       write every secret file docker-compose.yml mounts into --secrets-dir (default
             ./secrets, made 0700): postgres_password, fingerprint_key, signing_key,
             operator_token, grafana_admin_password, each freshly generated in its required format,
             mode 0600. It refuses to overwrite or to write through a link: if any of them exists
             (a dangling link included), nothing is written (exit 2).
  generate   print a fresh secret of 32 random bytes as 64 hex digits, fit for
             ANONSTREAM_SIGNING_KEY or ANONSTREAM_FINGERPRINT_KEY (the same as
             python -c 'import secrets; print(secrets.token_hex(32))').

Examples:
  anonstream keys init --secrets-dir secrets
  ANONSTREAM_SIGNING_KEY=$(anonstream keys generate) anonstream keys public
"""


def init_secrets(folder: Path) -> list[Path]:
    """Write every compose secret file into ``folder`` (0600) and make the folder 0700 (created so, or
    tightened when it was looser); refuse to overwrite any of them, or to write through a link (a
    dangling one included), before writing anything. Returns the files written."""
    from core.errors import ParamsError

    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise ParamsError(f"--secrets-dir {folder}: not a folder (a link or a file); give a real folder",
                          reason="invalid-path")
    taken = [name for name in SECRET_FILES if os.path.lexists(folder / name)]  # a dangling link counts
    if taken:
        raise ParamsError(f"{folder} already has {', '.join(taken)}: keys init never overwrites a secret (the "
                          "ledger's fingerprints depend on fingerprint_key) nor writes through a link; remove "
                          "them first to start afresh", reason="exists")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)  # an existing folder too: the secrets are no one else's to list
    written = []
    for name, (make, _what) in SECRET_FILES.items():
        fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(make() + "\n")
        written.append(folder / name)
    return written


def cmd_keys(args: argparse.Namespace) -> int:
    if args.action == "init":
        folder = Path(args.secrets_dir)
        for path in init_secrets(folder):
            print(f"keys: wrote {path} (0600): {SECRET_FILES[path.name][1]}")
        print(f"keys: the containers run as their own users: make the files readable to them with "
              f"`chmod 0444 {folder}/*` (the folder stays 0700); never change fingerprint_key once reports "
              "have been ingested")
        return 0
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
    p = sub.add_parser("keys", help="the public key of the releases, a new secret, or every secret file (init)",
                       description=KEYS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=["public", "generate", "init"], help="public | generate | init")
    p.add_argument("--secrets-dir", default="secrets", metavar="DIR",
                   help="init: the folder of the secret files (default ./secrets, as docker-compose.yml)")
    p.set_defaults(func=cmd_keys)
