"""Engines and the unit of work: one transaction per unit, committed on success, rolled back on error."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from sqlalchemy import CursorResult, Engine, Result, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker


def make_engine(url: str, readonly: bool = False, **kwargs: Any) -> Engine:
    """An engine for ``url``. SQLite gets WAL, a busy timeout and foreign keys, and its folder is created.

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
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            conn.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")

        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


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
