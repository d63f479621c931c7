"""db tests run on a real PostgreSQL (started once per test process) and on SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from db import Database
from stream.testing.services import PostgresServer, postgres


@pytest.fixture(scope="session")
def pg() -> PostgresServer:
    return postgres()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    return request.getfixturevalue("pg").create_database("db")


@pytest.fixture
def ledger_db(db_url: str) -> Iterator[Database]:
    import migrations

    migrations.upgrade(db_url)
    db = Database(db_url)
    yield db
    db.dispose()
