"""Bulk writes of many rows in one statement, with a PostgreSQL fast path.

A 10,000-report window means 10,000 pending rows written at ingest, then 10,000 ledger fingerprints
and 10,000 state updates at release. Through SQLAlchemy's ``insertmanyvalues`` every row costs
Python work under the GIL (parameter processing and rendering, then psycopg2's quoting of a
500-row ``VALUES`` list), which competes with faust's event loop in the same process. On
PostgreSQL the rows travel instead as **one JSON document** that the server expands with
``json_to_recordset``: the Python side is one ``json.dumps`` (C), the per-row work moves to the
server, and the statement is the same INSERT with the same constraints, conflict clause, triggers
and foreign keys. Other backends (SQLite, the embedded default) use the portable statements.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import String, Table, any_, bindparam, func, select, text, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session
from sqlalchemy.types import BigInteger

from db.session import insert_ignore, rowcount

_PG = postgresql.dialect()


def use_fast_path(session: Session) -> bool:
    """Whether the PostgreSQL fast path applies (``bench/ledger_writes.py`` turns it off to compare)."""
    return session.get_bind().dialect.name == "postgresql"


def _json_value(obj: Any) -> Any:
    """Datetimes as ISO-8601 in UTC (the ledger stores timezone-aware UTC only)."""
    if isinstance(obj, datetime):
        if obj.tzinfo is None:
            raise ValueError("naive datetime given to the ledger; use timezone-aware UTC")
        return obj.astimezone(UTC).isoformat()
    raise TypeError(f"cannot write a {type(obj).__name__} in a bulk insert")


def _pg_insert_sql(table: Table, columns: list[str], conflict: list[str] | None) -> str:
    quote = _PG.identifier_preparer.quote
    names = ", ".join(quote(c) for c in columns)
    shape = ", ".join(f"{quote(c)} {table.c[c].type.compile(dialect=_PG)}" for c in columns)
    sql = (f"INSERT INTO {quote(table.name)} ({names}) SELECT {names} "
           f"FROM json_to_recordset(CAST(:rows AS json)) AS r({shape})")
    if conflict is not None:
        sql += f" ON CONFLICT ({', '.join(quote(c) for c in conflict)}) DO NOTHING"
    return sql


def bulk_insert(session: Session, table: Table, rows: list[dict[str, Any]],
                ignore_conflicts_on: list[str] | None = None) -> int:
    """Insert ``rows`` (all with the same keys) in one statement; returns how many were inserted.

    With ``ignore_conflicts_on`` a row whose key already exists is skipped (``ON CONFLICT DO
    NOTHING``) and not counted.
    """
    if not rows:
        return 0
    if use_fast_path(session):
        columns = list(rows[0])
        payload = json.dumps(rows, default=_json_value, allow_nan=False, separators=(",", ":"))
        res = session.execute(text(_pg_insert_sql(table, columns, ignore_conflicts_on)), {"rows": payload})
        return int(rowcount(res))
    if ignore_conflicts_on is None:
        session.execute(table.insert(), rows)
        return len(rows)
    return sum(insert_ignore(session, table, rows[i:i + 500], ignore_conflicts_on) for i in range(0, len(rows), 500))


def update_where_ids(session: Session, table: Table, ids: list[int], where: Any, values: dict[str, Any]) -> int:
    """``UPDATE table SET values WHERE id IN ids AND where``; returns the number of rows changed.

    PostgreSQL gets the ids as one array parameter (``id = ANY(:ids)``) instead of one bind
    parameter per id.
    """
    if not ids:
        return 0
    id_col = table.c.id
    if use_fast_path(session):
        stmt = (update(table).where(id_col == any_(bindparam("ids", type_=ARRAY(BigInteger))), where)
                .values(**values))
        return int(rowcount(session.execute(stmt, {"ids": list(ids)})))
    changed = 0
    for i in range(0, len(ids), 500):
        changed += int(rowcount(session.execute(update(table).where(id_col.in_(ids[i:i + 500]), where)
                                                .values(**values))))
    return changed



def values_present(session: Session, column: Any, values: list[str]) -> set[str]:
    """The subset of ``values`` that occur in ``column`` (one array-parameter query on PostgreSQL)."""
    if not values:
        return set()
    if use_fast_path(session):
        stmt = select(column).where(column == any_(bindparam("vals", type_=ARRAY(String))))
        return set(session.execute(stmt, {"vals": list(values)}).scalars())
    out: set[str] = set()
    for i in range(0, len(values), 500):
        out.update(session.execute(select(column).where(column.in_(values[i:i + 500]))).scalars())
    return out


def value_counts(session: Session, column: Any, values: list[str]) -> dict[str, int]:
    """How many rows hold each of ``values`` in ``column`` (values held by none are left out)."""
    if not values:
        return {}
    if use_fast_path(session):
        stmt = (select(column, func.count()).where(column == any_(bindparam("vals", type_=ARRAY(String))))
                .group_by(column))
        return {v: int(n) for v, n in session.execute(stmt, {"vals": list(values)}).all()}
    out: dict[str, int] = {}
    for i in range(0, len(values), 500):
        out.update({v: int(n) for v, n in session.execute(
            select(column, func.count()).where(column.in_(values[i:i + 500])).group_by(column)).all()})
    return out
