"""The bulk writes: the same rows, counts and values on PostgreSQL's JSON fast path and on SQLite."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import func, select

from db import Database
from db.bulk import bulk_insert, update_where_ids, value_counts, values_present
from db.models import PendingReport, Window

T0 = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)


def window_row() -> dict:
    return {"id": "w1", "key": "station:S1", "start": T0, "end": T0 + timedelta(days=1), "seq": 0,
            "state": "open", "count": 0, "opened_at": T0, "last_input_at": T0}


def pending(i: int, **extra: Any) -> dict[str, Any]:
    row = {"fingerprint": f"fp{i:04d}".ljust(64, "0"), "person_fp": None if i % 2 else f"p{i}",
           "content_hash": "h".ljust(64, "0"), "station_id": "S1", "window_key": "station:S1", "window_id": "w1",
           "event_time": T0 + timedelta(minutes=i), "received_at": T0, "state": "pending",
           "data": {"suburb": "Zürich \"Nord\"", "age": str(20 + i), "offence": "Theft"}}
    return {**row, **extra}


def test_insert_counts_skips_conflicts_and_keeps_values_exactly(ledger_db: Database) -> None:
    table = PendingReport.__table__
    with ledger_db.unit() as s:
        s.execute(Window.__table__.insert(), [window_row()])
        assert bulk_insert(s, table, [pending(i) for i in range(5)], ignore_conflicts_on=["fingerprint"]) == 5
    with ledger_db.unit() as s:  # 3..7: 3 and 4 exist already and are skipped, not counted
        east = timezone(timedelta(hours=10))
        rows = [pending(i, event_time=(T0 + timedelta(minutes=i)).astimezone(east)) for i in range(3, 8)]
        assert bulk_insert(s, table, rows, ignore_conflicts_on=["fingerprint"]) == 3
    with ledger_db.read() as s:
        got = s.execute(select(PendingReport).order_by(PendingReport.fingerprint)).scalars().all()
    assert [g.fingerprint for g in got] == [pending(i)["fingerprint"] for i in range(8)]
    for i, g in enumerate(got):
        assert g.event_time == T0 + timedelta(minutes=i) and g.event_time.utcoffset() == timedelta(0)
        assert g.data == pending(i)["data"] and list(g.data) == ["suburb", "age", "offence"]  # order kept
        assert g.person_fp == pending(i)["person_fp"] and g.state == "pending"


def test_a_naive_datetime_is_refused(ledger_db: Database) -> None:
    with pytest.raises(Exception, match="naive"), ledger_db.unit() as s:
        s.execute(Window.__table__.insert(), [window_row()])
        bulk_insert(s, PendingReport.__table__, [pending(0, event_time=datetime(2024, 3, 1))])


def test_update_where_ids_counts_only_rows_that_match(ledger_db: Database) -> None:
    table = PendingReport.__table__
    with ledger_db.unit() as s:
        s.execute(Window.__table__.insert(), [window_row()])
        bulk_insert(s, table, [pending(i) for i in range(1200)])
        ids = list(s.execute(select(table.c.id).order_by(table.c.id)).scalars())
    with ledger_db.unit() as s:
        assert update_where_ids(s, table, ids[:700], table.c.state == "pending", {"state": "released"}) == 700
        # 600..1199: 600..699 are released already and do not match the condition
        assert update_where_ids(s, table, ids[600:], table.c.state == "pending",
                                {"state": "suppressed", "release_id": "r1"}) == 500
        assert update_where_ids(s, table, [], table.c.state == "pending", {"state": "x"}) == 0
    with ledger_db.read() as s:
        counts: dict[str, int] = {state: n for state, n in s.execute(select(table.c.state, func.count())
                                                                     .group_by(table.c.state))}
        tagged = s.execute(select(func.count()).where(table.c.release_id == "r1")).scalar_one()
    assert counts == {"released": 700, "suppressed": 500} and tagged == 500


def test_values_present_finds_exactly_the_stored_values(ledger_db: Database) -> None:
    table = PendingReport.__table__
    with ledger_db.unit() as s:
        s.execute(Window.__table__.insert(), [window_row()])
        bulk_insert(s, table, [pending(i) for i in range(1200)])
    stored = [pending(i)["fingerprint"] for i in range(0, 1200, 3)]
    absent = [f"zz{i}" for i in range(700)]
    with ledger_db.read() as s:
        assert values_present(s, table.c.fingerprint, stored + absent) == set(stored)
        assert values_present(s, table.c.person_fp, ["p0", "p1", "p2"]) == {"p0", "p2"}  # odd rows have none
        assert values_present(s, table.c.fingerprint, []) == set()


def test_value_counts_counts_each_stored_value(ledger_db: Database) -> None:
    table = PendingReport.__table__
    with ledger_db.unit() as s:
        s.execute(Window.__table__.insert(), [window_row()])
        bulk_insert(s, table, [pending(i, content_fp=f"c{i % 7}") for i in range(1200)])
    with ledger_db.read() as s:
        counts = value_counts(s, table.c.content_fp, [f"c{j}" for j in range(7)] + [f"zz{i}" for i in range(700)])
        assert counts == {f"c{j}": len(range(j, 1200, 7)) for j in range(7)}  # absent values left out
        assert value_counts(s, table.c.content_fp, []) == {}
