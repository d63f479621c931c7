"""db tests run on a real PostgreSQL (started once per test process) and on SQLite."""

from __future__ import annotations

import pytest

from stream.testing.services import PostgresServer, postgres


@pytest.fixture(scope="session")
def pg() -> PostgresServer:
    return postgres()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path) -> str:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    return request.getfixturevalue("pg").create_database("db")


@pytest.fixture
def ledger_db(db_url: str):  # type: ignore[no-untyped-def]
    import migrations
    from db import Database

    migrations.upgrade(db_url)
    db = Database(db_url)
    yield db
    db.dispose()
