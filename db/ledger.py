"""Ingest side of the ledger: the pending pool, DLQ counters, the station check, due windows.

Window assignment is :mod:`db.windows` (each report's own event time). One batch is written in one
transaction; besides the caller's rejections (from validation), the ledger itself refuses, and
counts as dead letters, reports that

* come from a station that is not registered when the registry is enforced (``unknown-station``;
  counted under the station ``(unregistered)`` so a flood of invented ids adds no counter rows);
* reuse a report id for a different event (``report-id-reused``): same station and report id as a
  report already in the pool but another event time. The same id with the same event time and other
  content is a ``correction`` (it replaces the report while pending, else it is counted and never
  released: :mod:`db.corrections`), identical content a ``duplicate``;
* would need a window beyond the key's hourly window-creation bound (``window-rate``).

The caller dead-letters those from :attr:`IngestResult.refused` after the transaction commits.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime
from typing import Literal

from sqlalchemy import update
from sqlalchemy.orm import Session

from db.bulk import bulk_insert
from db.corrections import REPLACED, apply_corrections, sort_versions
from db.models import Counter, DlqEvent, PendingReport
from db.reports import IncomingReport, IngestResult, Rejection
from db.session import Database, insert_ignore, rowcount
from db.stations import UNREGISTERED, register_seen, registered_in
from db.window_state import due_windows, pool_sizes
from db.windows import WindowPolicy, WindowRouter

__all__ = ["IncomingReport", "IngestResult", "PoolRepository", "Rejection", "WindowPolicy", "WindowRouter",
           "due_windows", "pool_sizes"]

StationCheck = Literal["open", "first-sight", "registered"]


log = logging.getLogger(__name__)


def is_transient(exc: BaseException) -> bool:
    """A database error that says nothing about the data (connection lost, server down, timeouts)."""
    from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    if isinstance(exc, OperationalError | InterfaceError | PoolTimeout | _Retry | ConnectionError | TimeoutError):
        return True
    return (isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)) or isinstance(exc, RuntimeError)


class _Retry(Exception):
    """A window closed or a report was inserted concurrently: redo the whole unit."""


def _bump(session: Session, station: str, kind: str, reason: str, n: int, now: datetime,
          feed: str = "default") -> None:
    if n <= 0:
        return
    stmt = (update(Counter).where(Counter.feed == feed, Counter.station_id == station, Counter.kind == kind,
                                  Counter.reason == reason)
            .values(count=Counter.count + n, last_at=now))
    if rowcount(session.execute(stmt)) == 0:
        inserted = insert_ignore(session, Counter.__table__, [
            {"feed": feed, "station_id": station, "kind": kind, "reason": reason, "count": n, "last_at": now}],
            ["feed", "station_id", "kind", "reason"])
        if not inserted:
            session.execute(stmt)


REFUSALS = {
    "unknown-station": "station is not registered (anonstream stations add)",
    "report-id-reused": "report id already used by this station for a different event time",
    "window-rate": "too many new windows for this key in the last hour; push again later",
}


class PoolRepository:
    """Writes accepted reports into the pending pool and rejected ones into the DLQ counters.

    ``stations``: ``open`` (no registry check), ``first-sight`` (register unknown stations) or
    ``registered`` (refuse reports of unregistered stations).
    """

    def __init__(self, db: Database, policy: WindowPolicy, stations: StationCheck = "open") -> None:
        self.db, self.policy, self.stations = db, policy, stations

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

    def ingest_isolating(self, reports: list[IncomingReport], rejections: list[Rejection],
                         now: datetime) -> IngestResult:
        """:meth:`ingest`, but a batch that fails for a reason other than the database being unreachable
        is written report by report, and a report that still fails is refused as ``internal-error``
        (naming the exception class) instead of failing its batch for ever. Transient errors propagate
        (the caller retries the whole batch; already written reports then count as duplicates)."""
        try:
            return self.ingest(reports, rejections, now)
        except Exception as exc:
            if is_transient(exc) or not reports:
                raise
            log.warning("batch write failed (%s); writing its %d report(s) one by one", type(exc).__name__,
                        len(reports))
        total = self.ingest([], rejections, now)
        for i, r in enumerate(reports):
            try:
                one = self.ingest([r], [], now)
                total.refused += [(i, reason, msg) for _j, reason, msg in one.refused]
            except Exception as exc:
                if is_transient(exc):
                    raise
                msg = f"ledger write failed with {type(exc).__name__}"
                one = self.ingest([], [Rejection(r.station_id, "internal-error", msg)], now)  # counts it
                total.refused.append((i, "internal-error", msg))
            total.accepted += one.accepted
            total.duplicates += one.duplicates
            total.corrections += one.corrections
            total.replaced += one.replaced
            total.rejected += one.rejected
            total.windows |= one.windows
            total.may_be_due = total.may_be_due or one.may_be_due
        return total

    def _known_stations(self, s: Session, reports: list[IncomingReport], rejections: list[Rejection],
                        now: datetime) -> set[str] | None:
        """Registered stations among the batch's (None: no registry check)."""
        if self.stations == "open":
            return None
        known = registered_in(s, {r.station_id for r in reports} | {r.station_id for r in rejections},
                              self.policy.feed)
        if self.stations == "first-sight":
            new = {r.station_id for r in reports} - known
            register_seen(s, new, now, self.policy.feed)
            known |= new
        return known

    def _ingest(self, s: Session, reports: list[IncomingReport], rejections: list[Rejection],
                now: datetime) -> IngestResult | None:
        known_stations = self._known_stations(s, reports, rejections, now)
        refused: dict[int, str] = {}
        if known_stations is not None:
            refused.update({i: "unknown-station" for i, r in enumerate(reports) if r.station_id not in known_stations})

        versions = sort_versions(s, [(i, r) for i, r in enumerate(reports) if i not in refused])
        refused.update({i: "report-id-reused" for i in versions.reused})
        fresh, dup_kind, corrected = versions.fresh, versions.repeats, versions.corrected

        router = WindowRouter(s, self.policy, now)
        router.prefetch({(r.window_key, self.policy.start_of(r.event_time)) for _i, r in fresh})
        rows = []
        for i, r in fresh:
            w = router.route(r.window_key, r.event_time)
            if w is None:
                refused[i] = "window-rate"
                continue
            router.advance(r.window_key, r.event_time)
            rows.append({"fingerprint": r.fingerprint, "person_fp": r.person_fp, "content_hash": r.content_hash,
                         "station_id": r.station_id, "window_key": r.window_key, "window_id": w.id,
                         "event_time": r.event_time, "received_at": now, "state": "pending", "data": r.data,
                         "content_fp": r.content_fp, "arrived_in": w.id})
        for r, _kind in dup_kind:
            router.tally_duplicate(r.window_key, r.event_time)
        for rej in rejections:  # dropped by on_missing = "drop": counted by the key's next manifest too
            if rej.window_key and (known_stations is None or rej.station_id in known_stations):
                router.tally_dropped(rej.window_key, now)
        router.save_watermarks()
        if router.commit_counts():
            return None
        inserted = bulk_insert(s, PendingReport.__table__, rows, ignore_conflicts_on=["fingerprint"])
        if inserted != len(rows):  # another worker inserted the same report concurrently
            return None
        fate = apply_corrections(s, corrected)
        res = IngestResult(accepted=inserted, windows={w for w, n in router.added.items() if n},
                           may_be_due=router.may_be_due(),
                           refused=[(i, refused[i], REFUSALS[refused[i]]) for i in sorted(refused)])
        res.rejected = len(rejections) + len(res.refused)
        self._count_rejections(s, rejections, reports, res.refused, known_stations, now)
        per_dup: dict[tuple[str, str, str], int] = defaultdict(int)
        for r, kind in dup_kind:
            reason = kind if kind == "duplicate" else fate.get(r.fingerprint, REPLACED)
            per_dup[(r.station_id, kind, reason)] += 1
            if kind == "duplicate":
                res.duplicates += 1
            else:
                res.corrections += 1
                res.replaced += reason == REPLACED
        for (station, kind, reason), n in per_dup.items():
            _bump(s, station, kind, reason, n, now, self.policy.feed)
        return res

    def _count_rejections(self, s: Session, rejections: list[Rejection], reports: list[IncomingReport],
                          refused: list[tuple[int, str, str]], known: set[str] | None, now: datetime) -> None:
        """DLQ events and counters; stations that are not registered are counted as ``(unregistered)``."""
        every = [*rejections, *(Rejection(reports[i].station_id, reason, msg) for i, reason, msg in refused)]
        per_reason: dict[tuple[str, str], int] = defaultdict(int)
        for rej in every:
            station = rej.station_id if known is None or rej.station_id in known else UNREGISTERED
            s.add(DlqEvent(at=now, feed=self.policy.feed, station_id=station, reason=rej.reason,
                           message=rej.message[:500]))
            per_reason[(station, rej.reason)] += 1
        for (station, reason), n in per_reason.items():
            _bump(s, station, "dlq", reason, n, now, self.policy.feed)
