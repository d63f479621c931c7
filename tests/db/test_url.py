"""Alembic's database URL (db.url, environment only) is the one the service settings resolve."""

from __future__ import annotations

from pathlib import Path

import pytest

from db.url import url_from_environment
from stream.config.settings import Settings


@pytest.mark.parametrize("env", [
    {},
    {"ANONSTREAM_HOME": "/srv/anon"},
    {"ANONSTREAM_DATA_DIR": "/srv/data"},
    {"ANONSTREAM_DATABASE_URL": "postgresql+psycopg2://anon@db:5432/ledger"},
    {"ANONSTREAM_DATABASE_URL": "postgresql+psycopg2://anon@db:5432/ledger", "ANONSTREAM_DATABASE_PASSWORD": "p%w"},
    {"ANONSTREAM_DATABASE_URL": "postgresql+psycopg2://anon:own@db/ledger", "ANONSTREAM_DATABASE_PASSWORD": "x"},
    {"ANONSTREAM_DATABASE_URL": "postgresql+psycopg2://anon@db/ledger", "ANONSTREAM_DATABASE_PASSWORD_FILE": "PW"},
    {"ANONSTREAM_DATABASE_URL_FILE": "URL"},
])
def test_migrations_resolve_the_url_the_settings_resolve(env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    (tmp_path / "PW").write_text("from-a-file\n")
    (tmp_path / "URL").write_text("postgresql+psycopg2://anon@db/from_file\n")
    for name in [n for n in __import__("os").environ if n.startswith("ANONSTREAM_")]:
        monkeypatch.delenv(name)
    env = {k: str(tmp_path / v) if k.endswith("_FILE") else v for k, v in env.items()}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    assert url_from_environment() == Settings().db_url()
