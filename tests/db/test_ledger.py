"""The ledger's guarantees on SQLite and PostgreSQL: dedup, windows, claims, one-transaction releases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import func, select

from db import (
    Database,
    IncomingReport,
    PoolRepository,
    Rejection,
    ReleaseConflict,
    ReleaseRepository,
    StoredRelease,
    WindowPolicy,
)
from db.ledger import due_windows
from db.models import Counter, DlqEvent, PendingReport, ReleasedFingerprint, Window

T0 = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)
NOW = datetime(2024, 3, 5, 12, 0, tzinfo=UTC)


def report(i: int, station: str = "S1", t: datetime = T0, offence: str = "Theft") -> IncomingReport:
    return IncomingReport(fingerprint=f"{station}-{i:06d}".ljust(64, "0"), person_fp=None,
                          content_hash=f"{offence}".ljust(64, "0"), station_id=station,
                          window_key=f"station:{station}", event_time=t,
                          data={"age": "30", "sex": "F", "offence": offence})


def windows(db: Database) -> list[Window]:
    with db.read() as s:
        return list(s.execute(select(Window).order_by(Window.start, Window.seq)).scalars())


def test_duplicates_and_corrections_are_counted_not_stored_twice(ledger_db: Database) -> None:
    pool = PoolRepository(ledger_db, WindowPolicy())
    first = pool.ingest([report(i) for i in range(10)], [Rejection("S1", "malformed-json", "bad")], NOW)
    assert (first.accepted, first.rejected) == (10, 1)
    again = pool.ingest([report(1), report(2), report(3, offence="Fraud"), report(3, offence="Fraud"),
                         report(11)], [], NOW)
    # 1 and 2 repeat stored reports; 3 corrects a stored one, then repeats its correction
    assert (again.accepted, again.duplicates, again.corrections) == (1, 3, 1)
    with ledger_db.read() as s:
        assert s.execute(select(func.count()).select_from(PendingReport)).scalar_one() == 11
        counts = dict(s.execute(select(Counter.kind, Counter.count)).tuples().all())
        assert s.execute(select(func.count()).select_from(DlqEvent)).scalar_one() == 1
    assert counts == {"dlq": 1, "duplicate": 3, "correction": 1}
    assert [w.count for w in windows(ledger_db)] == [11]


def test_size_cap_opens_next_sequence_window(ledger_db: Database) -> None:
    pool = PoolRepository(ledger_db, WindowPolicy(cap=4))
    pool.ingest([report(i) for i in range(10)], [], NOW)
    ws = windows(ledger_db)
    assert [(w.seq, w.count) for w in ws] == [(0, 4), (1, 4), (2, 2)]
    due = due_windows(ledger_db, WindowPolicy(cap=4), idle_s=3600, now=NOW)
    assert set(due) == {ws[0].id, ws[1].id}  # full windows close; the partial one waits


def test_late_report_goes_to_its_own_event_time_window_never_dropped(ledger_db: Database) -> None:
    policy = WindowPolicy(size_s=86_400, lateness_s=3_600)
    pool = PoolRepository(ledger_db, policy)
    pool.ingest([report(1, t=T0), report(2, t=T0 + timedelta(days=1))], [], NOW)
    # the watermark (day 2, 08:00) is past day 1's end + lateness: day 1 is due, day 2 is not
    day1, _day2 = windows(ledger_db)
    assert due_windows(ledger_db, policy, idle_s=3600, now=NOW) == [day1.id]
    late = pool.ingest([report(3, t=T0 + timedelta(hours=2))], [], NOW)
    assert late.accepted == 1 and late.windows == {day1.id}  # its own day, not the latest open one
    # once day 1 is closing, a later report of day 1 opens day 1's next window (seq 1), not day 2's
    assert ReleaseRepository(ledger_db).claim_window(day1.id, "a", NOW, 60, "due") is not None
    later = pool.ingest([report(4, t=T0 + timedelta(hours=3))], [], NOW)
    (wid,) = later.windows
    assert wid.startswith(day1.id.rsplit("|", 1)[0]) and wid.endswith("|1")
    with ledger_db.read() as s:
        assert s.execute(select(PendingReport.window_id).where(
            PendingReport.fingerprint == report(3).fingerprint)).scalar_one() == day1.id


def test_idle_window_is_due(ledger_db: Database) -> None:
    pool = PoolRepository(ledger_db, WindowPolicy())
    pool.ingest([report(1)], [], NOW)
    assert due_windows(ledger_db, WindowPolicy(), idle_s=30, now=NOW + timedelta(seconds=10)) == []
    assert len(due_windows(ledger_db, WindowPolicy(), idle_s=30, now=NOW + timedelta(seconds=31))) == 1


def _stored(window_id: str, ids: list[int], fps: list[str], rid: str = "r-1") -> StoredRelease:
    return StoredRelease(
        id=rid, window_id=window_id, window_key="station:S1", stations=["S1"], engine="optimal",
        params={"k": 2}, seed=42, k_achieved=2, l_achieved=1, information_loss=0.5, metrics={"gcp": 0.5},
        verification={"ok": True}, counts={"received": len(ids), "released": len(ids), "suppressed": 0,
                                           "held_back": 0}, checksum="0" * 64, manifest={"release_id": rid},
        columns=["class_id", "age"], rows=[[0, "[30-34]"] for _ in ids], released_ids=ids,
        fingerprints=[(fp, None) for fp in fps])


def test_claims_and_release_transaction(ledger_db: Database) -> None:
    pool = PoolRepository(ledger_db, WindowPolicy())
    repo = ReleaseRepository(ledger_db)
    pool.ingest([report(i) for i in range(6)], [], NOW)
    (w,) = windows(ledger_db)
    assert repo.claim_window(w.id, "a", NOW, 60, "idle") is not None
    assert repo.claim_window(w.id, "b", NOW, 60, "idle") is None  # one closer at a time
    assert repo.claim_window(w.id, "b", NOW + timedelta(seconds=61), 60, "reclaimed") is not None
    cands = repo.candidates(w)
    assert len(cands) == 6
    ids, fps = [c.pool_id for c in cands], [c.fingerprint for c in cands]
    assert repo.store(_stored(w.id, ids, fps), "b", NOW, lease_s=60) is True
    assert repo.store(_stored(w.id, ids, fps), "b", NOW) is False  # idempotent by release id
    # a second release of the same reports is refused and leaves nothing behind
    pool.ingest([report(50)], [], NOW + timedelta(days=3))
    w2 = next(x for x in windows(ledger_db) if x.id != w.id)
    assert repo.claim_window(w2.id, "b", NOW, 60, "idle") is not None
    with pytest.raises(ReleaseConflict):
        repo.store(_stored(w2.id, ids[:2], [], rid="r-2"), "b", NOW)
    with ledger_db.read() as s:
        assert s.execute(select(func.count()).select_from(ReleasedFingerprint)).scalar_one() == 6
        assert set(s.execute(select(PendingReport.state)).scalars()) == {"released", "pending"}
    # publishing is claimed from the moment of the store: the storing worker first, others only after
    # its lease runs out
    now = datetime.now(UTC)
    assert repo.claim_unpublished("c", now, 60) == []
    assert repo.claim_unpublished("b", now, 60) == ["r-1"]
    assert repo.claim_unpublished("c", now + timedelta(seconds=61), 60) == ["r-1"]
    repo.mark_published("r-1", "c", now)
    assert repo.claim_unpublished("c", now + timedelta(days=1), 60) == []
    manifest, columns, rows = repo.load("r-1")
    assert manifest == {"release_id": "r-1"} and columns == ["class_id", "age"] and len(rows) == 6


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)),
       st.sampled_from([60, 3600, 86_400]))
def test_window_start_contains_event(t: datetime, size: int) -> None:
    start = WindowPolicy(size_s=size).start_of(t)
    assert start <= t < start + timedelta(seconds=size)
    assert start.tzinfo is not None


def test_paused_station_windows_do_not_close(ledger_db: Database) -> None:
    from db.models import StationControl

    pool = PoolRepository(ledger_db, WindowPolicy())
    pool.ingest([report(1, "S1"), report(2, "S2")], [], NOW)
    with ledger_db.unit() as s:
        s.add(StationControl(station_id="S1", paused=True, updated_at=NOW, updated_by="test"))
    due = due_windows(ledger_db, WindowPolicy(), idle_s=1, now=NOW + timedelta(seconds=5))
    assert [w.split("|")[0] for w in due] == ["station:S2"]


def test_an_ingest_says_when_a_window_may_have_fallen_due(ledger_db: Database) -> None:
    """``may_be_due`` (the worker then looks for due windows at once): a batch that filled a window or opened
    one; a batch that only added to open windows leaves them to the next tick (time-based closes)."""
    pool = PoolRepository(ledger_db, WindowPolicy(cap=5))
    assert pool.ingest([report(i) for i in range(3)], [], NOW).may_be_due  # opened S1's window
    assert not pool.ingest([report(3)], [], NOW).may_be_due  # 4 of 5: nothing can be due yet
    assert pool.ingest([report(4)], [], NOW).may_be_due  # 5 of 5: full
    assert pool.ingest([report(5)], [], NOW).may_be_due  # the next window of the key opened
    assert not pool.ingest([report(6)], [], NOW).may_be_due
    assert not pool.ingest([report(6)], [], NOW).may_be_due  # a duplicate adds nothing
    assert pool.ingest([report(7, t=T0 + timedelta(days=1))], [], NOW).may_be_due  # a later period: a new window
    assert [(w.seq, w.count) for w in windows(ledger_db)] == [(0, 5), (1, 2), (0, 1)]
