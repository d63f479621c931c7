"""The ledger side of "no message can stop the stream", on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select

from db import Database, IncomingReport, PoolRepository, ReleaseRepository, WindowPolicy
from db.models import Counter, DlqEvent
from stream.intake.validate import ReportValidator, screen_batch
from tests.stream.intake.test_guards import CAUSES, KEY, NOW, raw_of


def test_ledger_causes_on_postgres_and_sqlite(ledger_db: Database, validator: ReportValidator, good: dict) -> None:
    """NUL and overlong station ids crashed the DLQ counter write on PostgreSQL; reused ids were silent."""
    pool = PoolRepository(ledger_db, WindowPolicy(), "registered")
    from db.stations import StationRegistry

    StationRegistry(ledger_db).add(["S1"], "test", NOW)
    raws = [raw_of(c, good) for c in sorted(CAUSES)]
    reused = good | {"event_time": "2024-03-01T23:59:00Z", "offence": "Fraud"}  # same id, another event
    correction = good | {"offence": "Fraud" if good["offence"] != "Fraud" else "Theft"}
    other = good | {"station_id": "S9", "report_id": "S9-1"}  # valid but unregistered
    first = screen_batch(validator, [*raws, json.dumps(good).encode()], KEY, lambda st: f"station:{st}", True, NOW)
    res1 = pool.ingest(first.accepted, first.rejections, NOW)
    assert res1.accepted == 1 and res1.rejected == len(CAUSES)
    second = screen_batch(validator, [json.dumps(x).encode() for x in (reused, correction, other)], KEY,
                          lambda st: f"station:{st}", True, NOW)
    res2 = pool.ingest(second.accepted, second.rejections, NOW)
    assert (res2.accepted, res2.corrections) == (0, 1)
    assert [r for _i, r, _m in res2.refused] == ["report-id-reused", "unknown-station"]
    with ledger_db.read() as s:
        counters = {(c.station_id, c.kind, c.reason): c.count for c in s.query(Counter)}
        assert counters[("S1", "dlq", "report-id-reused")] == 1
        assert counters[("(unregistered)", "dlq", "unknown-station")] == 1
        assert counters[("S1", "correction", "replaced")] == 1  # still pending: replaced
        assert all(len(st) <= 64 and "\x00" not in st for st, _k, _r in counters)
        assert s.query(DlqEvent).count() == len(CAUSES) + 2




def _incoming(i: int, t: datetime, station: str = "S1", content: str = "a") -> IncomingReport:
    return IncomingReport(fingerprint=f"{station}-{i}-".ljust(64, "x"), person_fp=None,
                          content_hash=content.ljust(64, "0"), station_id=station,
                          window_key=f"station:{station}", event_time=t, data={"age": "30"})


def test_window_creation_rate_is_bounded_per_key(ledger_db: Database) -> None:
    pool = PoolRepository(ledger_db, WindowPolicy(max_new_windows_per_hour=3))
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    res = pool.ingest([_incoming(i, t0 + timedelta(days=i)) for i in range(5)] + [_incoming(9, t0, "S2")], [], NOW)
    assert res.accepted == 4 and [(i, r) for i, r, _m in res.refused] == [(3, "window-rate"), (4, "window-rate")]
    # reports of existing windows still go in; an hour later the key may open windows again
    assert pool.ingest([_incoming(20, t0 + timedelta(hours=1))], [], NOW).accepted == 1
    assert pool.ingest([_incoming(21, t0 + timedelta(days=7))], [], NOW + timedelta(hours=1, seconds=1)).accepted == 1
    with ledger_db.read() as s:
        assert s.execute(select(func.sum(Counter.count)).where(Counter.reason == "window-rate")).scalar_one() == 2


def test_first_sight_registers_and_registered_mode_refuses(ledger_db: Database) -> None:
    from db.stations import StationRegistry

    t0 = datetime(2024, 3, 1, tzinfo=UTC)
    assert PoolRepository(ledger_db, WindowPolicy(), "first-sight").ingest([_incoming(1, t0)], [], NOW).accepted == 1
    assert [r["station_id"] for r in StationRegistry(ledger_db).list()] == ["S1"]
    strict = PoolRepository(ledger_db, WindowPolicy(), "registered")
    res = strict.ingest([_incoming(2, t0), _incoming(3, t0, "S2")], [], NOW)
    assert res.accepted == 1 and [r for _i, r, _m in res.refused] == ["unknown-station"]
    assert StationRegistry(ledger_db).remove(["S1"], "test", NOW) == ["S1"]
    assert strict.ingest([_incoming(4, t0)], [], NOW).refused[0][1] == "unknown-station"


def test_duplicates_tally_on_the_open_window_and_carry_over(ledger_db: Database) -> None:
    from db.models import PendingReport, Window
    from db.window_state import carry_duplicates, event_span

    t0 = datetime(2024, 3, 1, 8, tzinfo=UTC)
    pool = PoolRepository(ledger_db, WindowPolicy())
    pool.ingest([_incoming(1, t0), _incoming(2, t0 + timedelta(hours=1))], [], NOW)
    again = pool.ingest([_incoming(1, t0), _incoming(2, t0 + timedelta(hours=1), content="b")], [], NOW)
    assert (again.duplicates, again.corrections, again.accepted) == (1, 1, 0)
    with ledger_db.read() as s:
        (w,) = s.execute(select(Window)).scalars().all()
        ids = list(s.execute(select(PendingReport.id)).scalars())
    assert w.duplicates == 2
    assert event_span(ledger_db, ids) == (t0, t0 + timedelta(hours=1))
    pool.ingest([_incoming(3, t0 + timedelta(days=1))], [], NOW)  # the next window of the key
    ReleaseRepository(ledger_db).finish_window(w.id, "carried", "too small", NOW)
    assert carry_duplicates(ledger_db, w.id, w.key)
    with ledger_db.read() as s:
        assert {x.seq if x.id == w.id else 9: x.duplicates for x in s.execute(select(Window)).scalars()} == {0: 0, 9: 2}
    # the key's last open window closes without a release: with no open window left, the tally waits on
    # the key (its next release counts it), and so do duplicates that arrive now
    with ledger_db.read() as s:
        (nxt,) = s.execute(select(Window).where(Window.id != w.id)).scalars().all()
    ReleaseRepository(ledger_db).finish_window(nxt.id, "carried", "too small", NOW)
    assert not carry_duplicates(ledger_db, nxt.id, nxt.key)
    assert ReleaseRepository(ledger_db).key_tallies(w.key)[0] == 2
    late = pool.ingest([_incoming(1, t0)], [], NOW)
    assert late.duplicates == 1
    assert ReleaseRepository(ledger_db).key_tallies(w.key)[0] == 3


def test_a_report_the_database_refuses_is_isolated_not_a_failed_batch(ledger_db: Database) -> None:
    """The last resort at the ledger: a report whose write fails for a non-transient reason (here a
    value the JSON column cannot serialize) is refused as internal-error; its batch is written."""
    t0 = datetime(2024, 3, 1, 8, tzinfo=UTC)
    bad = IncomingReport(fingerprint="b" * 64, person_fp=None, content_hash="c" * 64, station_id="S1",
                         window_key="station:S1", event_time=t0, data={"age": object()})
    pool = PoolRepository(ledger_db, WindowPolicy())
    res = pool.ingest_isolating([_incoming(1, t0), bad, _incoming(2, t0)], [], NOW)
    assert (res.accepted, res.rejected) == (2, 1)
    assert [(i, r) for i, r, _m in res.refused] == [(1, "internal-error")]
    with ledger_db.read() as s:
        assert s.execute(select(Counter.count).where(Counter.reason == "internal-error")).scalar_one() == 1
