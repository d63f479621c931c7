"""Due windows too small to release are sized, claimed and closed together (db/small_windows.py)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from db import Database, PoolRepository, ReleaseRepository, WindowPolicy
from db.models import PendingReport, Window
from db.small_windows import claim_small, finish_small, window_sizes
from tests.db.test_ledger import NOW, report, windows

LEASE = 10.0


def test_small_windows_are_claimed_with_their_carried_reports_and_closed_together(ledger_db: Database) -> None:
    pool, repo = PoolRepository(ledger_db, WindowPolicy()), ReleaseRepository(ledger_db)
    pool.ingest([report(i) for i in range(3)], [], NOW)
    (old,) = windows(ledger_db)
    repo.claim_window(old.id, "w", NOW, LEASE, "idle")
    repo.finish_window(old.id, "carried", "too small", NOW, worker="w")  # 3 reports of S1 wait
    pool.ingest([report(3)] + [report(i, station="S2") for i in range(60)]
                + [report(0, station=f"F{j}") for j in range(700)], [], NOW)  # more than one chunk of ids
    due = [w.id for w in windows(ledger_db) if w.state == "open"]
    s1 = next(w for w in due if w.startswith("station:S1|"))
    s2 = next(w for w in due if w.startswith("station:S2|"))
    sizes = window_sizes(ledger_db, due)
    assert (sizes[s1].own, sizes[s1].carried, sizes[s2].waiting) == (1, 3, 60)
    assert {w.waiting for wid, w in sizes.items() if "station:F" in wid} == {1}

    at = NOW + timedelta(seconds=1)
    claimed = claim_small(ledger_db, due, 50, "w", at, LEASE)
    assert {w.id for w in claimed} == set(due) - {s2}, "S2 has 60 reports waiting: left open, untouched"
    mine = next(w for w in claimed if w.id == s1)
    assert len(mine.candidates) == 4 and {c.window_id for c in mine.candidates} == {s1}, "carried ones adopted"
    with ledger_db.read() as s:
        state = {w.id: (w.state, w.claimed_by) for w in s.execute(select(Window)).scalars()}
        assert set(s.execute(select(PendingReport.window_id).where(PendingReport.station_id == "S1")).scalars()) \
            == {s1}
    assert state[s2] == ("open", None) and state[s1] == ("closing", "w")

    outcomes: dict[str, tuple[str, str | None]] = {w.id: ("carried", "too small: 1 report(s) to release < k=5")
                                                   for w in claimed}
    outcomes[s1] = ("carried", "too small: 4 report(s) to release < k=5")
    assert finish_small(ledger_db, outcomes, "other", at) == 0, "only the claim's holder closes them"
    assert finish_small(ledger_db, outcomes, "w", at) == len(claimed) == 701
    with ledger_db.read() as s:
        rows = {w.id: (w.state, w.hold_reason) for w in s.execute(select(Window)).scalars()}
        pending = s.execute(select(PendingReport.state).where(PendingReport.station_id != "S2")).scalars().all()
    assert rows[s1] == ("carried", "too small: 4 report(s) to release < k=5")
    assert {r for wid, r in rows.items() if "station:F" in wid} == {
        ("carried", "too small: 1 report(s) to release < k=5")}
    assert len(pending) == 704 and set(pending) == {"pending"}
    assert repo.accounting()["carried"] == 704


def test_a_window_of_a_key_with_two_due_windows_is_left_to_the_one_by_one_path(ledger_db: Database) -> None:
    pool = PoolRepository(ledger_db, WindowPolicy())
    pool.ingest([report(0), report(1, t=NOW - timedelta(days=3))], [], NOW)
    due = [w.id for w in windows(ledger_db)]
    assert len(due) == 2
    assert claim_small(ledger_db, due, 50, "w", NOW, LEASE) == []
    assert {w.state for w in windows(ledger_db)} == {"open"}
