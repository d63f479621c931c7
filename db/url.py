"""The ledger's database URL from the environment, for callers without the service settings (Alembic).

The service resolves the same URL through its settings (``Settings.db_url``, with the helpers below);
a test holds the two equal. Order: ``ANONSTREAM_DATABASE_URL`` (or the file named by ``ANONSTREAM_DATABASE_URL_FILE``),
with the password from ``ANONSTREAM_DATABASE_PASSWORD`` (or ``..._FILE``) filled in when the URL has
none; else SQLite at ``anonstream.db`` in the data directory (``ANONSTREAM_HOME``, else
``ANONSTREAM_DATA_DIR``, else ``./var``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

PREFIX = "ANONSTREAM_"


def with_password(url: str, password: str | None) -> str:
    """``url`` with ``password`` filled in when the URL carries none."""
    if not password:
        return url
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.password:
        return url
    return parsed.set(password=password).render_as_string(hide_password=False)


def sqlite_url(data_dir: Path) -> str:
    """The embedded default: a SQLite file in the data directory."""
    return f"sqlite:///{(Path(data_dir) / 'anonstream.db').resolve()}"


def _value(env: Mapping[str, str], name: str) -> str | None:
    """``ANONSTREAM_<NAME>`` if set, else the stripped content of ``ANONSTREAM_<NAME>_FILE``."""
    direct = env.get(PREFIX + name)
    if direct:
        return direct
    path = env.get(f"{PREFIX}{name}_FILE")
    return Path(path).read_text().strip() if path else None


def url_from_environment(env: Mapping[str, str] | None = None) -> str:
    """The database URL the service would use, from environment variables alone."""
    env = os.environ if env is None else env
    url = _value(env, "DATABASE_URL")
    if url:
        return with_password(url, _value(env, "DATABASE_PASSWORD"))
    return sqlite_url(Path(env.get(PREFIX + "HOME") or env.get(PREFIX + "DATA_DIR") or "var"))
