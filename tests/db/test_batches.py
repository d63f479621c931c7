"""Push batches in the ledger (db/batches.py): a station's windows close when its batch is complete, the
windows a batch completed are merged into releases worth publishing, and the operator's flush."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import cast

from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import func, select, update

from db import Database, IncomingReport, PoolRepository, ReleaseRepository, WindowPolicy
from db.batches import BatchMark, begin, chunks, end, merge_completed
from db.ledger import due_windows
from db.models import Batch, PendingReport, Window
from db.window_state import request_flush

DAY = datetime(2021, 1, 1, 10, 0, tzinfo=UTC)
NOW = datetime(2021, 6, 1, 12, 0, tzinfo=UTC)
POLICY = WindowPolicy(idle_timeout_s=60)


def report(i: int, day: int, station: str = "S1") -> IncomingReport:
    return IncomingReport(fingerprint=f"{station}-{i:06d}".ljust(64, "0"), person_fp=None,
                          content_hash=f"{i}".ljust(64, "0"), station_id=station, window_key=f"station:{station}",
                          event_time=DAY + timedelta(days=day), data={"age": "30", "sex": "F", "offence": "Theft"})


def open_windows(db: Database, key: str = "station:S1") -> list[Window]:
    with db.read() as s:
        return list(s.execute(select(Window).where(Window.key == key, Window.state == "open")
                              .order_by(Window.start, Window.seq)).scalars())


def mark(batch: str = "b-1", station: str = "S1", rows: int | None = None) -> BatchMark:
    return BatchMark(station, batch, f"station:{station}", rows)


def test_a_running_batch_keeps_its_windows_open_whatever_the_watermark(ledger_db: Database) -> None:
    pool = PoolRepository(ledger_db, POLICY)
    begin(ledger_db, "default", [mark()], NOW)
    # unsorted: the latest day first moves the watermark past every earlier day
    pool.ingest([report(0, 200), *(report(i, i) for i in range(1, 6))], [], NOW)
    assert due_windows(ledger_db, POLICY, 60, NOW + timedelta(seconds=5)) == []
    # a station without markers keeps the watermark rule
    pool.ingest([report(10, 200, "S2"), report(11, 1, "S2")], [], NOW)
    s2_day1 = open_windows(ledger_db, "station:S2")[0].id
    assert due_windows(ledger_db, POLICY, 60, NOW + timedelta(seconds=5)) == [s2_day1]
    end(ledger_db, "default", [mark(rows=6)], NOW + timedelta(seconds=6))
    assert due_windows(ledger_db, POLICY, 60, NOW + timedelta(seconds=7)) == [s2_day1]  # S1: merged first
    assert len(merge_completed(ledger_db, POLICY, NOW + timedelta(seconds=7))) == 5  # one window of 6 left
    due = due_windows(ledger_db, POLICY, 60, NOW + timedelta(seconds=7))
    assert set(due) == {w.id for w in open_windows(ledger_db)} | {s2_day1} and len(due) == 2
    with ledger_db.read() as s:
        (b,) = s.execute(select(Batch)).scalars().all()
    assert (b.rows, b.ended_at) == (6, NOW + timedelta(seconds=6))


def test_a_running_batch_holds_its_windows_however_long_its_rows_take(ledger_db: Database) -> None:
    """Issue 39: on a loaded machine the worker may read nothing of a running push for longer than the idle
    timeout; the windows of its key wait for the end marker, never cut off at what was ingested so far."""
    pool = PoolRepository(ledger_db, POLICY)
    begin(ledger_db, "default", [mark()], NOW)
    pool.ingest([report(i, 1) for i in range(3)], [], NOW)
    for stalled in (61, 3600, 23 * 3600):  # far past the idle timeout, and the watermark passed day 1 long ago
        assert due_windows(ledger_db, POLICY, 60, NOW + timedelta(seconds=stalled)) == []
        assert merge_completed(ledger_db, POLICY, NOW + timedelta(seconds=stalled)) == []
    at = NOW + timedelta(hours=23, minutes=30)
    pool.ingest([report(i, 1) for i in range(3, 7)], [], at)  # the rest of the push arrives
    end(ledger_db, "default", [mark(rows=7)], at)
    merge_completed(ledger_db, POLICY, at)
    (w,) = open_windows(ledger_db)
    assert due_windows(ledger_db, POLICY, 60, at) == [w.id] and w.count == 7


def test_a_push_that_died_is_ended_by_the_next_push_or_held_a_day_at_most(ledger_db: Database) -> None:
    pool = PoolRepository(ledger_db, POLICY)
    begin(ledger_db, "default", [mark()], NOW)
    pool.ingest([report(0, 200), report(1, 1)], [], NOW)
    assert due_windows(ledger_db, POLICY, 60, NOW + timedelta(hours=1)) == []  # no end marker yet: held
    flushed = request_flush(ledger_db, POLICY, ["station:S1"], NOW + timedelta(hours=1))  # the operator's way out
    windows = flushed[0]["windows"]
    assert isinstance(windows, list)
    assert set(due_windows(ledger_db, POLICY, 60, NOW + timedelta(hours=1))) == set(windows)
    with ledger_db.unit() as s:  # unflag: the test goes on without the flush
        s.execute(update(Window).values(flush=False))
    # the station's next push ends the dead one: its windows are merged and closed with the new batch's
    begin(ledger_db, "default", [mark("b-2")], NOW + timedelta(hours=2))
    pool.ingest([report(2, 2)], [], NOW + timedelta(hours=2))
    assert due_windows(ledger_db, POLICY, 60, NOW + timedelta(hours=3)) == []
    end(ledger_db, "default", [mark("b-2", rows=1)], NOW + timedelta(hours=3))
    merge_completed(ledger_db, POLICY, NOW + timedelta(hours=3))
    assert set(due_windows(ledger_db, POLICY, 60, NOW + timedelta(hours=3))) == {w.id for w in open_windows(ledger_db)}
    # a dead push whose station never pushes again stops holding windows a day after it began
    begin(ledger_db, "default", [mark("b-3", "S2")], NOW)
    pool.ingest([report(3, 1, "S2")], [], NOW)
    (s2,) = open_windows(ledger_db, "station:S2")
    assert s2.id not in due_windows(ledger_db, POLICY, 60, NOW + timedelta(hours=23))
    assert s2.id in due_windows(ledger_db, POLICY, 60, NOW + timedelta(hours=25))  # idle, watermark passed


def test_markers_are_idempotent_and_a_new_batch_ends_an_unfinished_one(ledger_db: Database) -> None:
    begin(ledger_db, "default", [mark("b-1")], NOW)
    begin(ledger_db, "default", [mark("b-1")], NOW + timedelta(seconds=1))  # redelivered
    begin(ledger_db, "default", [mark("b-2")], NOW + timedelta(seconds=2))  # b-1 never ended
    end(ledger_db, "default", [mark("b-2", rows=3)], NOW + timedelta(seconds=3))
    end(ledger_db, "default", [mark("b-2", rows=3)], NOW + timedelta(seconds=9))  # redelivered
    end(ledger_db, "default", [mark("b-3", rows=4)], NOW + timedelta(seconds=4))  # an end marker alone
    with ledger_db.read() as s:
        rows = {b.batch_id: (b.begun_at, b.ended_at, b.rows) for b in s.execute(select(Batch)).scalars()}
    t = [NOW + timedelta(seconds=i) for i in range(5)]
    assert rows == {"b-1": (t[0], t[2], None), "b-2": (t[2], t[3], 3), "b-3": (t[4], t[4], 4)}


def test_the_windows_a_batch_completed_are_merged_in_even_chunks_of_at_most_cap(ledger_db: Database) -> None:
    policy = WindowPolicy(idle_timeout_s=60, cap=25)
    pool = PoolRepository(ledger_db, policy)
    begin(ledger_db, "default", [mark()], NOW)
    reports = [report(i, day) for day in range(10) for i in range(day * 100, day * 100 + 6)]  # 10 days x 6
    pool.ingest(reports[::-1], [], NOW)  # pushed latest first
    assert merge_completed(ledger_db, policy, NOW) == []  # the batch is still running: nothing to merge
    end(ledger_db, "default", [mark(rows=60)], NOW)
    gone = merge_completed(ledger_db, policy, NOW + timedelta(seconds=1))
    assert len(gone) == 7
    targets = open_windows(ledger_db)
    assert [w.count for w in targets] == [18, 18, 24]  # 60 reports, at most 25 each, about even, in day order
    with ledger_db.read() as s:
        per_window = dict(s.execute(select(PendingReport.window_id, func.count()).group_by(PendingReport.window_id))
                          .tuples().all())
        merged = s.execute(select(func.count()).select_from(Window).where(Window.state == "merged")).scalar_one()
        assert s.execute(select(Batch.merged_at)).scalar_one() is not None
    assert per_window == {w.id: w.count for w in targets} and merged == 7
    assert set(due_windows(ledger_db, policy, 60, NOW + timedelta(seconds=2))) == {w.id for w in targets}
    assert merge_completed(ledger_db, policy, NOW + timedelta(seconds=3)) == []  # done once


def _two_pushes(db: Database, station: str, read_between: bool, t0: datetime) -> None:
    """Two pushes of ``station`` (days 0-2, then days 3-5, 4 reports a day); the worker merges after each
    push (``read_between``) or only later, having found both in its backlog."""
    policy = WindowPolicy(idle_timeout_s=60)
    pool = PoolRepository(db, policy)
    for n, days in enumerate((range(0, 3), range(3, 6))):
        at = t0 + timedelta(seconds=10 * n)
        begin(db, "default", [mark(f"b-{n}", station)], at)
        pool.ingest([report(i, day, station) for day in days for i in range(day * 10, day * 10 + 4)], [], at)
        end(db, "default", [mark(f"b-{n}", station, rows=12)], at)
        if read_between:
            merge_completed(db, policy, at + timedelta(seconds=1))


def test_two_pushes_are_two_releases_however_late_the_worker_reads_them(ledger_db: Database) -> None:
    """A worker that found both pushes of S1 in its backlog (merged at S2's first tick) merges each push's
    windows on its own, as it did S2's, read as they came: what a release holds does not depend on how
    fast the worker is; and S2's second push leaves the window its first push merged into (not released
    yet) as it is. Before, S1's six days were merged into one window, and S2's too."""
    _two_pushes(ledger_db, "S1", read_between=False, t0=NOW)
    _two_pushes(ledger_db, "S2", read_between=True, t0=NOW + timedelta(minutes=1))
    merge_completed(ledger_db, POLICY, NOW + timedelta(minutes=5))
    assert [w.count for w in open_windows(ledger_db, "station:S1")] == [12, 12]
    assert [w.count for w in open_windows(ledger_db, "station:S2")] == [12, 12]


def test_merging_waits_for_every_batch_of_a_shared_key(ledger_db: Database) -> None:
    policy = WindowPolicy(by="global", idle_timeout_s=60)
    pool = PoolRepository(ledger_db, policy)
    a, b = BatchMark("S1", "b-1", "global"), BatchMark("S2", "b-2", "global")
    begin(ledger_db, "default", [a, b], NOW)
    pool.ingest([IncomingReport(**{**report(i, i % 3).__dict__, "window_key": "global"}) for i in range(9)], [], NOW)
    end(ledger_db, "default", [a], NOW)
    assert merge_completed(ledger_db, policy, NOW) == [] and due_windows(ledger_db, policy, 60, NOW) == []
    end(ledger_db, "default", [b], NOW + timedelta(seconds=1))
    assert len(merge_completed(ledger_db, policy, NOW + timedelta(seconds=1))) == 2
    assert [w.count for w in open_windows(ledger_db, "global")] == [9]


def test_without_merging_each_completed_window_closes_on_its_own(ledger_db: Database) -> None:
    policy = WindowPolicy(idle_timeout_s=60, merge_batch=False)
    pool = PoolRepository(ledger_db, policy)
    begin(ledger_db, "default", [mark()], NOW)
    pool.ingest([report(i, i) for i in range(4)], [], NOW)
    end(ledger_db, "default", [mark(rows=4)], NOW)
    assert due_windows(ledger_db, policy, 60, NOW) == []
    assert merge_completed(ledger_db, policy, NOW) == []
    assert len(due_windows(ledger_db, policy, 60, NOW)) == 4


@given(st.lists(st.integers(0, 40), max_size=40), st.integers(1, 60))
def test_chunks_keep_order_and_stay_under_cap(counts: list[int], cap: int) -> None:
    ws = [Window(id=str(i), count=c) for i, c in enumerate(counts)]
    out = chunks(ws, cap)
    assert [w for c in out for w in c] == ws
    assert all(len(c) == 1 or sum(w.count for w in c) <= cap for c in out)


def test_flush_asks_for_a_release_of_what_waits(ledger_db: Database) -> None:
    pool = PoolRepository(ledger_db, POLICY)
    repo = ReleaseRepository(ledger_db)
    pool.ingest([report(i, 0) for i in range(3)] + [report(9, 0, "S2")], [], NOW)
    (w,) = open_windows(ledger_db)
    assert repo.claim_window(w.id, "a", NOW, 60, "due") is not None
    repo.finish_window(w.id, "carried", "too small", NOW, worker="a")  # 3 reports wait in a carried window
    assert repo.accounting()["carried"] == 3
    done = request_flush(ledger_db, POLICY, ["station:S1", "station:S2", "station:S3"], NOW)
    assert [(d["key"], d["pending"], len(cast(list[str], d["windows"]))) for d in done] == [
        ("station:S1", 3, 1), ("station:S2", 1, 1), ("station:S3", 0, 0)]
    fresh = open_windows(ledger_db)[0]  # a new window of S1's day, next sequence, that adopts them
    assert (fresh.flush, fresh.seq, fresh.start) == (True, 1, w.start)
    s2 = open_windows(ledger_db, "station:S2")[0]
    assert set(due_windows(ledger_db, POLICY, 3600, NOW)) == {fresh.id, s2.id}
    claimed = repo.claim_window(fresh.id, "a", NOW, 60, "due")
    assert claimed is not None and len(repo.candidates(claimed)) == 3
