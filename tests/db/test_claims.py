"""Claims are leases: renewed by their holder, taken over only when it stops, and fencing its writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from db import Database, LostClaim, PoolRepository, ReleaseRepository, WindowPolicy
from db.models import PendingReport, Release, Window
from tests.db.test_ledger import NOW, T0, _stored, report, windows

LEASE = 10.0


def _at(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def test_a_renewed_lease_never_expires_and_a_dead_holders_does(ledger_db: Database) -> None:
    PoolRepository(ledger_db, WindowPolicy()).ingest([report(i) for i in range(3)], [], NOW)
    (w,) = windows(ledger_db)
    repo = ReleaseRepository(ledger_db)
    assert repo.claim_window(w.id, "a", _at(0), LEASE, "idle") is not None
    for t in range(3, 60, 3):  # "a" renews every lease/3: "b" never gets the window
        assert repo.renew("a", [w.id], [], _at(t), LEASE) == (set(), set())
        assert repo.claim_window(w.id, "b", _at(t + 1), LEASE, "reclaimed") is None
        assert repo.stale_closing(_at(t + 1), LEASE) == []
    # "a" stops renewing at t=57: its lease runs out at 67, and "b" takes the window over then
    assert repo.claim_window(w.id, "b", _at(66), LEASE, "reclaimed") is None
    assert repo.stale_closing(_at(68), LEASE) == [w.id]
    assert repo.claim_window(w.id, "b", _at(68), LEASE, "reclaimed") is not None
    assert repo.renew("a", [w.id], [], _at(69), LEASE) == ({w.id}, set())  # "a" learns it lost the claim


def test_ledger_writes_are_fenced_by_the_claim(ledger_db: Database) -> None:
    PoolRepository(ledger_db, WindowPolicy()).ingest([report(i) for i in range(4)], [], NOW)
    (w,) = windows(ledger_db)
    repo = ReleaseRepository(ledger_db)
    repo.claim_window(w.id, "a", _at(0), LEASE, "idle")
    cands = repo.candidates(w)
    ids, fps = [c.pool_id for c in cands], [c.fingerprint for c in cands]
    repo.claim_window(w.id, "b", _at(11), LEASE, "reclaimed")  # a's lease ran out
    with pytest.raises(LostClaim):
        repo.store(_stored(w.id, ids, fps), "a", _at(12))
    with pytest.raises(LostClaim):
        repo.finish_window(w.id, "carried", "too small", _at(12), worker="a")
    with ledger_db.read() as s:
        assert s.execute(select(func.count()).select_from(Release)).scalar_one() == 0
        stored = s.get(Window, w.id)
        assert stored is not None and stored.state == "closing"
    assert repo.store(_stored(w.id, ids, fps), "b", _at(12)) is True


def test_carried_reports_are_adopted_by_one_closing_window(ledger_db: Database) -> None:
    pool = PoolRepository(ledger_db, WindowPolicy())
    repo = ReleaseRepository(ledger_db)
    pool.ingest([report(i) for i in range(3)], [], NOW)
    (w0,) = windows(ledger_db)
    repo.claim_window(w0.id, "a", _at(0), LEASE, "idle")
    repo.finish_window(w0.id, "carried", "too small", _at(1), worker="a")
    pool.ingest([report(10 + i, t=T0 + timedelta(days=1)) for i in range(3)]
                + [report(20 + i, t=T0 + timedelta(days=2)) for i in range(3)], [], _at(2))
    _, w1, w2 = windows(ledger_db)
    # two windows of the key close concurrently: the carried reports go to the first claim only
    assert repo.claim_window(w1.id, "a", _at(3), LEASE, "due") is not None
    assert repo.claim_window(w2.id, "b", _at(3), LEASE, "due") is not None
    c1, c2 = repo.candidates(w1), repo.candidates(w2)
    assert len(c1) == 6 and len(c2) == 3
    assert not {c.fingerprint for c in c1} & {c.fingerprint for c in c2}
    # both store without conflict
    assert repo.store(_stored(w2.id, [c.pool_id for c in c2], [c.fingerprint for c in c2], rid="r-2"), "b", _at(4))
    assert repo.store(_stored(w1.id, [c.pool_id for c in c1], [c.fingerprint for c in c1], rid="r-1"), "a", _at(4))
    with ledger_db.read() as s:
        assert set(s.execute(select(PendingReport.state)).scalars()) == {"released"}


def test_a_failed_holder_gives_its_claim_up_at_once(ledger_db: Database) -> None:
    PoolRepository(ledger_db, WindowPolicy()).ingest([report(1)], [], NOW)
    (w,) = windows(ledger_db)
    repo = ReleaseRepository(ledger_db)
    repo.claim_window(w.id, "a", _at(0), LEASE, "idle")
    assert repo.give_up(w.id, "b", _at(1)) is False  # only the holder can
    assert repo.give_up(w.id, "a", _at(1)) is True
    assert repo.stale_closing(_at(1), LEASE) == [w.id]
    assert repo.claim_window(w.id, "a", _at(1), LEASE, "reclaimed") is not None


def test_store_stamps_the_publish_claim_at_store_time(ledger_db: Database) -> None:
    """A release that took longer than a lease to compute is not up for grabs the moment it is stored."""
    PoolRepository(ledger_db, WindowPolicy()).ingest([report(i) for i in range(2)], [], NOW)
    (w,) = windows(ledger_db)
    repo = ReleaseRepository(ledger_db)
    claimed_long_ago = datetime.now(UTC) - timedelta(hours=1)
    repo.claim_window(w.id, "a", claimed_long_ago, 3600 * 2, "idle")
    cands = repo.candidates(w)
    assert repo.store(_stored(w.id, [c.pool_id for c in cands], [c.fingerprint for c in cands]), "a",
                      claimed_long_ago, lease_s=LEASE)
    now = datetime.now(UTC)
    assert repo.claim_unpublished("b", now, LEASE) == []
    assert repo.renew("a", [], ["r-1"], now + timedelta(seconds=8), LEASE) == (set(), set())
    assert repo.claim_unpublished("b", now + timedelta(seconds=15), LEASE) == []  # renewed
    assert repo.claim_unpublished("b", now + timedelta(seconds=19), LEASE) == ["r-1"]
