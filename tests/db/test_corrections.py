"""The corrections policy in the ledger (db/corrections.py), on SQLite and PostgreSQL: a correction of a
pending report replaces it; one of a report whose window is closing or released is counted, not stored."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from db import Database, PoolRepository, ReleaseRepository, WindowPolicy
from db.corrections import preview
from db.models import Counter, PendingReport
from tests.db.test_ledger import NOW, report, windows


def _offence(db: Database, i: int) -> str:
    with db.read() as s:
        return s.execute(select(PendingReport.data).where(
            PendingReport.fingerprint == report(i).fingerprint)).scalar_one()["offence"]


def _counters(db: Database) -> dict[tuple[str, str], int]:
    with db.read() as s:
        return {(c.kind, c.reason): c.count for c in s.execute(select(Counter)).scalars()}


def test_a_correction_replaces_a_pending_report(ledger_db: Database) -> None:
    pool = PoolRepository(ledger_db, WindowPolicy())
    pool.ingest([report(i) for i in range(5)], [], NOW)
    res = pool.ingest([report(1, offence="Fraud"), report(7), report(7, offence="Arson")], [], NOW)
    assert (res.accepted, res.duplicates, res.corrections, res.replaced) == (1, 0, 2, 2)
    assert _offence(ledger_db, 1) == "Fraud"  # stored report replaced
    assert _offence(ledger_db, 7) == "Arson"  # a correction in the same batch: the newest version is stored
    assert _counters(ledger_db)[("correction", "replaced")] == 2
    (w,) = windows(ledger_db)
    assert (w.count, w.duplicates) == (6, 2)  # one report each, and both corrections tallied on the window


def test_a_correction_of_a_report_being_released_is_counted_not_stored(ledger_db: Database) -> None:
    pool = PoolRepository(ledger_db, WindowPolicy())
    pool.ingest([report(i) for i in range(5)], [], NOW)
    (w,) = windows(ledger_db)
    assert ReleaseRepository(ledger_db).claim_window(w.id, "worker", NOW, 60, "idle") is not None
    with ledger_db.read() as s:
        assert preview(s, [(report(2, offence="Fraud").fingerprint, report(2, offence="Fraud").content_hash,
                            report(2).event_time)]) == {"released": 1}
    res = pool.ingest([report(2, offence="Fraud")], [], NOW + timedelta(seconds=1))
    assert (res.corrections, res.replaced) == (1, 0)
    assert _offence(ledger_db, 2) == "Theft"  # the window's release carries the version it read
    assert _counters(ledger_db)[("correction", "released")] == 1


def test_preview_sorts_reports_as_the_ingest_would(ledger_db: Database) -> None:
    PoolRepository(ledger_db, WindowPolicy()).ingest([report(i) for i in range(3)], [], NOW)
    items = [report(0), report(1, offence="Fraud"), report(2, t=NOW, offence="Fraud"), report(9)]
    with ledger_db.read() as s:
        got = preview(s, [(r.fingerprint, r.content_hash, r.event_time) for r in items])
    assert got == {"duplicate": 1, "replaced": 1, "reused": 1, "new": 1}
