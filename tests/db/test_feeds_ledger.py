"""The ledger per feed (SQLite and PostgreSQL): windows, due windows, reclaims, publishing claims, counters."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy import select

from db import Database, PoolRepository, Rejection, ReleaseRepository, WindowPolicy
from db.feeds import feed_of_release, feed_summary
from db.ledger import IncomingReport, due_windows
from db.models import Counter, DlqEvent, Window
from db.stations import StationRegistry
from tests.db.test_ledger import NOW, _stored, report


def _in(feed: str, i: int, station: str = "S1") -> IncomingReport:
    """A report of ``feed`` under the same station and report number in every feed (its window key and
    fingerprint are the feed's, as stream/config/feeds.py makes them)."""
    r = report(i, station)
    return replace(r, fingerprint=f"{feed}-{r.fingerprint}"[:64], window_key=f"{feed}/station:{station}")


def test_each_feed_sees_only_its_own_windows_and_counters(ledger_db: Database) -> None:
    a, b = WindowPolicy(feed="a"), WindowPolicy(feed="b")
    PoolRepository(ledger_db, a).ingest([_in("a", i) for i in range(3)], [Rejection("S1", "bad-value", "x")], NOW)
    PoolRepository(ledger_db, b).ingest([_in("b", i) for i in range(4)], [], NOW)
    with ledger_db.read() as s:
        feeds = dict(s.execute(select(Window.id, Window.feed)).tuples().all())
        dlq = s.execute(select(Counter.feed, Counter.station_id, Counter.count)
                        .where(Counter.kind == "dlq")).tuples().all()
        events = s.execute(select(DlqEvent.feed)).scalars().all()
    assert sorted(feeds.values()) == ["a", "b"]
    assert dlq == [("a", "S1", 1)] and events == ["a"]
    later = NOW + timedelta(hours=2)
    (wa,) = due_windows(ledger_db, a, idle_s=60, now=later)
    (wb,) = due_windows(ledger_db, b, idle_s=60, now=later)
    assert (feeds[wa], feeds[wb]) == ("a", "b")
    assert due_windows(ledger_db, WindowPolicy(), idle_s=60, now=later) == []  # the default feed has none

    repo = ReleaseRepository(ledger_db)
    assert repo.claim_window(wa, "w", later, 10.0, "idle") is not None
    assert repo.claim_window(wb, "w", later, 10.0, "idle") is not None
    stale = later + timedelta(seconds=30)
    assert repo.stale_closing(stale, 10.0, "a") == [wa] and repo.stale_closing(stale, 10.0, "b") == [wb]
    assert sorted(repo.stale_closing(stale, 10.0)) == sorted([wa, wb])
    with ledger_db.read() as s:
        ids = {w: [p for (p,) in s.execute(sa.text("SELECT id FROM pending_reports WHERE window_id = :w"), {"w": w})]
               for w in (wa, wb)}
    assert repo.store(_stored(wa, ids[wa], [f"fa{i}" for i in ids[wa]], rid="r-a"), "w", later)
    assert repo.store(_stored(wb, ids[wb], [f"fb{i}" for i in ids[wb]], rid="r-b"), "w", later)
    assert repo.claim_unpublished("w", later, 10.0, feed="a") == ["r-a"]
    assert repo.claim_unpublished("w", later, 10.0, feed="b") == ["r-b"]
    with ledger_db.read() as s:
        assert (feed_of_release(s, "r-a"), feed_of_release(s, "r-b"), feed_of_release(s, "r-c")) == ("a", "b", None)
        summary = {f["feed"]: f for f in feed_summary(s, later)}
        only_b = feed_summary(s, later, "b")
    assert (summary["a"]["released"], summary["b"]["released"]) == (3, 4)
    assert summary["a"]["releases"] == {"stored": 1} and summary["a"]["dlq"] == 1 and summary["b"]["dlq"] == 0
    assert [f["feed"] for f in only_b] == ["b"]


def test_each_feed_has_its_own_station_registry(ledger_db: Database) -> None:
    assert StationRegistry(ledger_db, "b").add(["S1"], "test", NOW) == ["S1"]
    strict_a = PoolRepository(ledger_db, WindowPolicy(feed="a"), "registered")
    strict_b = PoolRepository(ledger_db, WindowPolicy(feed="b"), "registered")
    refused = strict_a.ingest([_in("a", 1)], [], NOW)
    assert (refused.accepted, [r for _i, r, _m in refused.refused]) == (0, ["unknown-station"])
    assert strict_b.ingest([_in("b", 1)], [], NOW).accepted == 1
    # first sight registers a station with its own feed only
    PoolRepository(ledger_db, WindowPolicy(feed="c"), "first-sight").ingest([_in("c", 2, "S9")], [], NOW)
    assert [r["station_id"] for r in StationRegistry(ledger_db, "c").list()] == ["S9"]
    assert [r["station_id"] for r in StationRegistry(ledger_db, "b").list()] == ["S1"]
    assert StationRegistry(ledger_db).list() == [] and StationRegistry(ledger_db, "b").remove(["S9"], "t", NOW) == []


def test_downgrade_folds_the_feeds_counters_and_registries_into_the_default_feed(db_url: str) -> None:
    import migrations
    from db import Database

    migrations.upgrade(db_url)
    db = Database(db_url)
    PoolRepository(db, WindowPolicy(feed="a")).ingest([], [Rejection("S1", "bad-value", "x")] * 2, NOW)
    PoolRepository(db, WindowPolicy()).ingest([], [Rejection("S1", "bad-value", "x")], NOW)
    PoolRepository(db, WindowPolicy(feed="b")).ingest([], [Rejection("S2", "bad-value", "x")], NOW)
    StationRegistry(db, "a").add(["S1", "S3"], "test", NOW)
    StationRegistry(db, "b").add(["S3"], "test", NOW)
    StationRegistry(db).add(["S1"], "test", NOW)
    db.dispose()
    from alembic.script import ScriptDirectory

    before = ScriptDirectory.from_config(migrations.config()).get_revision("0005").down_revision
    migrations.downgrade(db_url, str(before))  # to the revision before the feeds migration
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as c:
            rows = sorted(c.execute(sa.text("SELECT station_id, count FROM counters")).all())
            stations = sorted(c.execute(sa.text("SELECT station_id FROM stations")).scalars())
    finally:
        engine.dispose()
    assert rows == [("S1", 1), ("S2", 1)]  # the default feed's row wins where both have one
    assert stations == ["S1", "S3"]  # registered with any feed: registered
    migrations.upgrade(db_url)
