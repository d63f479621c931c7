"""Engines and the unit of work: one transaction per unit, committed on success, rolled back on error."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from sqlalchemy import CursorResult, Engine, Result, create_engine, event, pool, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

# The PostgreSQL advisory lock key held while the schema is migrated (any fixed 64-bit number works;
# this one spells "anonstrm" in ASCII, so it does not collide with another program's small keys).
SCHEMA_LOCK_KEY = 0x616E6F6E7374726D


def make_engine(url: str, readonly: bool = False, **kwargs: Any) -> Engine:
    """An engine for ``url``. SQLite gets WAL, a busy timeout, foreign keys and ``synchronous=FULL``
    (WAL with ``NORMAL`` may lose the last commits, such as a privacy-budget spend, on a power loss),
    and its folder is created.

    SQLite write units start with ``BEGIN IMMEDIATE`` (take the write lock first, so read-then-write
    units never deadlock); ``readonly`` engines use a plain deferred ``BEGIN`` so reads never wait.
    """
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, **kwargs)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            # Let SQLAlchemy issue BEGIN itself so a unit of work is one real transaction.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=FULL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            conn.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")

        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL; None for another database or an in-memory one."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:" \
            or parsed.database.startswith("file:"):
        return None
    return Path(parsed.database)


@contextmanager
def schema_lock(url: str) -> Iterator[None]:
    """Hold the ledger's schema lock: one process at a time checks and migrates a database's schema.

    SQLite: an exclusive ``flock`` on ``<file>.lock`` beside the database file (created 0600 if missing,
    and left in place: removing it would let a process lock a file another one no longer sees); the
    folder is created. PostgreSQL: the session advisory lock :data:`SCHEMA_LOCK_KEY` on a connection of
    its own (released on exit, or by the server if this process dies). Other URLs: no lock. Blocks
    until the lock is free; whoever comes second finds the schema migrated and has nothing to do."""
    path = sqlite_file(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock
        return
    if make_url(url).get_backend_name() != "postgresql":
        yield
        return
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
            yield  # closing the connection (NullPool: really closed) releases the lock
    finally:
        engine.dispose()


class Database:
    """An engine plus a session factory; :meth:`unit` opens one transaction."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        self.url = url
        self.engine = make_engine(url, **kwargs)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._read_engine = make_engine(url, readonly=True, **kwargs) if url.startswith("sqlite") else self.engine
        self._reads = sessionmaker(self._read_engine, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def unit(self) -> Iterator[Session]:
        """A unit of work: everything inside commits together or not at all."""
        session = self._sessions()
        try:
            with session.begin():
                yield session
        finally:
            session.close()

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A read-only unit (on SQLite it does not take the write lock)."""
        session = self._reads()
        try:
            with session.begin():
                yield session
        finally:
            session.close()

    def dispose(self) -> None:
        self.engine.dispose()
        if self._read_engine is not self.engine:
            self._read_engine.dispose()


def rowcount(result: Result[Any]) -> int:
    """Rows matched by an UPDATE, DELETE or INSERT. ``Session.execute`` is typed to return a plain
    :class:`~sqlalchemy.Result`; for a DML statement it is a :class:`~sqlalchemy.CursorResult`,
    which carries ``rowcount``."""
    return cast(CursorResult[Any], result).rowcount


def insert_ignore(session: Session, table: Any, rows: list[dict[str, Any]], keys: list[str]) -> int:
    """INSERT ... ON CONFLICT (keys) DO NOTHING; returns how many rows were inserted."""
    if not rows:
        return 0
    name = session.get_bind().dialect.name
    dialect_insert = postgresql.insert if name == "postgresql" else sqlite.insert
    pk = next(iter(table.primary_key.columns))
    stmt = dialect_insert(table).on_conflict_do_nothing(index_elements=keys).returning(pk)
    return len(session.execute(stmt, rows).all())


def utc(t: datetime | str) -> datetime:
    """Aggregates bypass the column type on SQLite (naive or text): back to aware UTC."""
    if isinstance(t, str):
        t = datetime.fromisoformat(t)
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
