"""Ingest side of the ledger: the pending pool, window assignment, DLQ counters, due windows.

Window rules (see :mod:`stream.windows` for the event-time arithmetic):

* a report's natural window is the tumbling window of its key that contains its event time;
* a window with ``count >= cap`` is full: further reports of that window go to the next sequence
  number of the same period (``seq + 1``);
* if the key's watermark (highest event time seen) has passed the natural window's end plus the
  allowed lateness, the report is late: it goes to the next open window of its key (or the window of
  the watermark), never dropped;
* a window may be claimed for closing concurrently with an ingest; the ingest's conditional
  ``UPDATE ... WHERE state = 'open'`` detects that and re-routes the reports.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from db.bulk import bulk_insert
from db.models import Counter, DlqEvent, PendingReport, StationControl, Watermark, Window
from db.session import Database, insert_ignore


class _Retry(Exception):
    """A window closed or a report was inserted concurrently: redo the whole unit."""


@dataclass(frozen=True)
class IncomingReport:
    """An accepted report without direct identifiers."""

    fingerprint: str
    person_fp: str | None
    content_hash: str
    station_id: str
    window_key: str
    event_time: datetime
    data: dict[str, Any]


@dataclass(frozen=True)
class Rejection:
    station_id: str
    reason: str
    message: str


@dataclass
class IngestResult:
    accepted: int = 0
    duplicates: int = 0
    corrections: int = 0
    rejected: int = 0
    windows: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class WindowPolicy:
    size_s: int = 86_400
    lateness_s: int = 3_600
    cap: int = 10_000

    def start_of(self, t: datetime) -> datetime:
        epoch = int(t.timestamp())
        return datetime.fromtimestamp(epoch - epoch % self.size_s, t.tzinfo)

    def window_id(self, key: str, start: datetime, seq: int) -> str:
        return f"{key}|{start.strftime('%Y-%m-%dT%H:%M:%SZ')}|{seq}"


def _bump(session: Session, station: str, kind: str, reason: str, n: int, now: datetime) -> None:
    if n <= 0:
        return
    stmt = (update(Counter).where(Counter.station_id == station, Counter.kind == kind, Counter.reason == reason)
            .values(count=Counter.count + n, last_at=now))
    if session.execute(stmt).rowcount == 0:
        inserted = insert_ignore(session, Counter.__table__, [
            {"station_id": station, "kind": kind, "reason": reason, "count": n, "last_at": now}],
            ["station_id", "kind", "reason"])
        if not inserted:
            session.execute(stmt)


class WindowRouter:
    """Assigns reports of one ingest transaction to windows, creating windows as needed."""

    def __init__(self, session: Session, policy: WindowPolicy, now: datetime) -> None:
        self.s, self.policy, self.now = session, policy, now
        self.cache: dict[str, Window] = {}
        self.added: dict[str, int] = defaultdict(int)
        self.watermarks: dict[str, datetime] = {}
        self.current: dict[tuple[str, datetime], Window] = {}
        self.late: dict[tuple[str, datetime], Window | None] = {}

    def advance(self, key: str, t: datetime) -> None:
        wm = self.watermark(key)
        if wm is None or t > wm:
            self.watermarks[key] = t

    def watermark(self, key: str) -> datetime | None:
        if key not in self.watermarks:
            row = self.s.get(Watermark, key)
            if row is not None:
                self.watermarks[key] = row.event_time
        return self.watermarks.get(key)

    def save_watermarks(self) -> None:
        for key, t in self.watermarks.items():
            stmt = update(Watermark).where(Watermark.key == key, Watermark.event_time < t).values(event_time=t)
            if self.s.execute(stmt).rowcount == 0:
                insert_ignore(self.s, Watermark.__table__, [{"key": key, "event_time": t}], ["key"])

    def _load(self, key: str, start: datetime) -> Window | None:
        """Latest-sequence window of (key, start)."""
        row = self.s.execute(select(Window).where(Window.key == key, Window.start == start)
                             .order_by(Window.seq.desc()).limit(1)).scalar_one_or_none()
        if row is not None:
            self.cache[row.id] = row
        return row

    def _create(self, key: str, start: datetime, seq: int) -> Window:
        wid = self.policy.window_id(key, start, seq)
        insert_ignore(self.s, Window.__table__, [{
            "id": wid, "key": key, "start": start, "end": start + timedelta(seconds=self.policy.size_s),
            "seq": seq, "state": "open", "count": 0, "duplicates": 0, "last_input_at": self.now,
            "created_at": self.now}], ["id"])
        row = self.s.get(Window, wid, populate_existing=True)
        assert row is not None
        self.cache[wid] = row
        return row

    def _has_room(self, w: Window) -> bool:
        return w.state == "open" and w.count + self.added[w.id] < self.policy.cap

    def _in_period(self, key: str, start: datetime) -> Window:
        w = self.current.get((key, start))
        if w is None or not self._has_room(w):
            w = w if w is not None else self._load(key, start)
            while w is None or not self._has_room(w):
                w = self._create(key, start, 0 if w is None else w.seq + 1)
            self.current[(key, start)] = w
        return w

    def route(self, key: str, event_time: datetime) -> Window:
        start = self.policy.start_of(event_time)
        wm = self.watermark(key) or event_time
        size = timedelta(seconds=self.policy.size_s)
        if wm < start + size + timedelta(seconds=self.policy.lateness_s):
            w = self._in_period(key, start)
        else:  # late: the next open window of this key, else the watermark's window
            if (key, start) not in self.late:
                self.late[(key, start)] = self.s.execute(
                    select(Window).where(Window.key == key, Window.state == "open", Window.start > start)
                    .order_by(Window.start, Window.seq).limit(1)).scalar_one_or_none()
            w = self.late[(key, start)]
            if w is None or not self._has_room(w):
                w = self._in_period(key, self.policy.start_of(wm))
        self.added[w.id] += 1
        return w

    def commit_counts(self) -> list[str]:
        """Apply the count increments; returns window ids that were closed meanwhile (re-route)."""
        lost = []
        for wid, n in self.added.items():
            res = self.s.execute(update(Window).where(Window.id == wid, Window.state == "open")
                                 .values(count=Window.count + n, last_input_at=self.now))
            if res.rowcount == 0:
                lost.append(wid)
        return lost


class PoolRepository:
    """Writes accepted reports into the pending pool and rejected ones into the DLQ counters."""

    def __init__(self, db: Database, policy: WindowPolicy) -> None:
        self.db, self.policy = db, policy

    def ingest(self, reports: list[IncomingReport], rejections: list[Rejection], now: datetime) -> IngestResult:
        """Persist one batch in one transaction (retried by the caller on failure)."""
        for _attempt in range(5):
            try:
                with self.db.unit() as s:
                    result = self._ingest(s, reports, rejections, now)
                    if result is None:
                        raise _Retry
                    return result
            except _Retry:
                continue
        raise RuntimeError("windows kept closing during ingest; giving up on this batch")

    def _ingest(self, s: Session, reports: list[IncomingReport], rejections: list[Rejection],
                now: datetime) -> IngestResult | None:
        res = IngestResult(rejected=len(rejections))
        for rej in rejections:
            s.add(DlqEvent(at=now, station_id=rej.station_id, reason=rej.reason, message=rej.message[:500]))
        per_reason: dict[tuple[str, str], int] = defaultdict(int)
        for rej in rejections:
            per_reason[(rej.station_id, rej.reason)] += 1
        for (station, reason), n in per_reason.items():
            _bump(s, station, "dlq", reason, n, now)

        unique: dict[str, IncomingReport] = {}
        dup_kind: list[tuple[IncomingReport, str]] = []
        for r in reports:
            if r.fingerprint in unique:
                same = unique[r.fingerprint].content_hash == r.content_hash
                dup_kind.append((r, "duplicate" if same else "correction"))
            else:
                unique[r.fingerprint] = r
        known: dict[str, str] = {}
        fps = list(unique)
        for i in range(0, len(fps), 500):
            rows = s.execute(select(PendingReport.fingerprint, PendingReport.content_hash)
                             .where(PendingReport.fingerprint.in_(fps[i:i + 500]))).all()
            known.update({fp: h for fp, h in rows})
        fresh = []
        for fp, r in unique.items():
            if fp in known:
                dup_kind.append((r, "duplicate" if known[fp] == r.content_hash else "correction"))
            else:
                fresh.append(r)

        router = WindowRouter(s, self.policy, now)
        rows = []
        for r in fresh:  # the watermark advances in arrival order
            router.advance(r.window_key, r.event_time)
            w = router.route(r.window_key, r.event_time)
            rows.append({"fingerprint": r.fingerprint, "person_fp": r.person_fp, "content_hash": r.content_hash,
                         "station_id": r.station_id, "window_key": r.window_key, "window_id": w.id,
                         "event_time": r.event_time, "received_at": now, "state": "pending", "data": r.data})
        router.save_watermarks()
        if router.commit_counts():
            return None
        inserted = bulk_insert(s, PendingReport.__table__, rows, ignore_conflicts_on=["fingerprint"])
        if inserted != len(rows):  # another worker inserted the same report concurrently
            return None
        res.accepted = inserted
        res.windows = set(router.added)
        per_dup: dict[tuple[str, str], int] = defaultdict(int)
        for r, kind in dup_kind:
            per_dup[(r.station_id, kind)] += 1
            if kind == "duplicate":
                res.duplicates += 1
            else:
                res.corrections += 1
        for (station, kind), n in per_dup.items():
            _bump(s, station, kind, kind, n, now)
        return res


def due_windows(db: Database, policy: WindowPolicy, idle_s: float, now: datetime) -> list[str]:
    """Open windows that should close now: watermark passed, full, or idle (not of paused stations)."""
    with db.read() as s:
        wms = dict(s.execute(select(Watermark.key, Watermark.event_time)).all())
        rows = s.execute(select(Window).where(Window.state == "open")).scalars().all()
        paused = {f"station:{st}" for st in s.execute(
            select(StationControl.station_id).where(StationControl.paused.is_(True))).scalars()}
    lateness = timedelta(seconds=policy.lateness_s)
    out = []
    for w in rows:
        if w.key in paused:
            continue
        wm = wms.get(w.key)
        if (w.count >= policy.cap or (wm is not None and wm >= w.end + lateness)
                or (now - w.last_input_at).total_seconds() >= idle_s):
            out.append(w.id)
    return out


def pool_sizes(db: Database) -> dict[str, int]:
    with db.read() as s:
        rows = s.execute(select(PendingReport.state, func.count()).group_by(PendingReport.state)).all()
    return {state: int(n) for state, n in rows}
