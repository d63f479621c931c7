"""Alembic migrations upgrade and downgrade on PostgreSQL and SQLite, and `alembic check` is clean."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

import migrations
from db import metadata


def _head() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(migrations.config()).get_current_head()
    assert head is not None
    return head


def _tables(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def test_upgrade_check_downgrade_upgrade(db_url: str) -> None:
    assert migrations.current(db_url) is None
    migrations.upgrade(db_url)
    assert migrations.current(db_url) == _head()
    assert _tables(db_url) == set(metadata.tables)
    migrations.check(db_url)  # raises if models and migrations differ
    migrations.downgrade(db_url, "base")
    assert migrations.current(db_url) is None
    assert _tables(db_url) == set()
    migrations.upgrade(db_url)
    migrations.check(db_url)


def test_migrate_cli_and_settings_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stream.cli.main import main

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("ANONSTREAM_DATABASE_URL", url)
    assert main(["migrate"]) == 0
    assert migrations.current(url) == _head()
    assert main(["migrate", "--check"]) == 0
    assert main(["migrate", "--downgrade", "base"]) == 0
    assert migrations.current(url) is None

