"""First runs on a new ledger at once: the schema is migrated once, under a lock, on SQLite and PostgreSQL;
SQLite connections run ``synchronous=FULL``."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import migrations
from db import metadata

PROCESSES = 5


def _upgrade(url: str, barrier: Any, results: Any) -> None:
    """A child process: wait for every other one, then migrate; report ``ok`` or the error."""
    barrier.wait()
    try:
        migrations.upgrade(url)
        results.put("ok")
    except Exception as exc:  # reported to the test, which shows it
        results.put(f"{type(exc).__name__}: {exc}")


def _head() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(migrations.config()).get_current_head()


def _run_at_once(url: str) -> list[str]:
    ctx = multiprocessing.get_context("spawn")  # no state of this process (threads, pools) carried over
    barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [ctx.Process(target=_upgrade, args=(url, barrier, results)) for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    out = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return out


def test_new_ledger_migrated_once_by_processes_at_once(db_url: str) -> None:
    """Five processes migrate one new database (SQLite file, or PostgreSQL) at the same moment: all
    succeed, the schema is at head with every table, and one version row."""
    assert migrations.current(db_url) is None
    assert _run_at_once(db_url) == ["ok"] * PROCESSES
    assert migrations.current(db_url) == _head()
    engine = sa.create_engine(db_url)
    try:
        assert set(sa.inspect(engine).get_table_names()) - {"alembic_version"} == set(metadata.tables)
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM alembic_version")).scalar() == 1
    finally:
        engine.dispose()
    migrations.check(db_url)


def test_sqlite_lock_file_beside_the_ledger(tmp_path: Path) -> None:
    """The SQLite lock is a file beside the database (the folder is created), readable by its owner only."""
    url = f"sqlite:///{tmp_path / 'sub' / 'new.db'}"
    migrations.upgrade(url)
    lock = tmp_path / "sub" / "new.db.lock"
    assert lock.is_file() and lock.stat().st_mode & 0o777 == 0o600
    assert migrations.current(url) == _head()


def test_sqlite_synchronous_full(tmp_path: Path) -> None:
    """A fresh connection of a SQLite ledger (write and read engines) reads back ``synchronous`` = 2 (FULL)."""
    from db import Database

    db = Database(f"sqlite:///{tmp_path / 'ledger.db'}")
    try:
        for engine in (db.engine, db._read_engine):
            with engine.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2
                assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        db.dispose()
