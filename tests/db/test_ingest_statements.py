"""A batch of reports from many stations new to the ledger (a flood of invented station ids) is routed to
its windows in a bounded number of statements per new key: the window, watermark and window-allowance
reads are done once per batch (``WindowRouter.prefetch``), not once per key. Counts only, no timing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import event, func, select
from sqlalchemy.engine import Engine

from db import Database, IncomingReport, PoolRepository, WindowPolicy
from db.models import PendingReport, Watermark, Window

NOW = datetime(2024, 3, 2, 12, tzinfo=UTC)
DAY = datetime(2024, 3, 1, 9, tzinfo=UTC)


@contextmanager
def _statements() -> Iterator[list[str]]:
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(Engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", record)


def _report(i: int, station: str, hour: int = 0) -> IncomingReport:
    return IncomingReport(fingerprint=f"{station}-{i:05d}".ljust(64, "0"), person_fp=None,
                          content_hash=f"{station}{i}".ljust(64, "0"), station_id=station,
                          window_key=f"station:{station}", event_time=DAY + timedelta(hours=hour),
                          data={"age": "30", "sex": "F", "offence": "Theft"})


def test_new_keys_cost_a_bounded_number_of_statements_each(ledger_db: Database) -> None:
    pool = PoolRepository(ledger_db, WindowPolicy())
    pool.ingest([_report(0, "S0")], [], NOW)  # the ledger's first write (its one-time reads) apart
    keys = 300
    with _statements() as seen:
        pool.ingest([_report(i, f"F{i:04d}") for i in range(keys)], [], NOW)
    # per new key: its window's insert, read back and count, its watermark's update and insert (about 1,507
    # statements for 300 keys; 2,703 before, when each key's window, watermark and allowance were read alone)
    assert len(seen) <= 5 * keys + 40, len(seen)
    with ledger_db.read() as s:  # and each report is where a report-by-report read puts it
        assert s.execute(select(func.count()).select_from(Window)).scalar_one() == keys + 1
        assert s.execute(select(func.count()).select_from(Watermark)).scalar_one() == keys + 1
        assert s.execute(select(func.count()).select_from(PendingReport)).scalar_one() == keys + 1
        assert set(s.execute(select(Window.count)).scalars()) == {1}


def test_a_known_key_routes_to_its_latest_window_after_prefetch(ledger_db: Database) -> None:
    """The prefetched window of a (key, start) is its latest sequence: a full window opens the next one."""
    pool = PoolRepository(ledger_db, WindowPolicy(cap=3))
    pool.ingest([_report(i, "S1") for i in range(5)], [], NOW)  # windows seq 0 (3) and seq 1 (2)
    pool.ingest([_report(i, "S1", hour=1) for i in range(5, 9)], [], NOW + timedelta(seconds=1))
    with ledger_db.read() as s:
        counts = [(w.seq, w.count) for w in s.execute(select(Window).order_by(Window.seq)).scalars()]
    assert counts == [(0, 3), (1, 3), (2, 3)]
