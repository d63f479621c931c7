"""Window state after ingest: which windows are due, the true event span of a release's reports, and
moving a closed window's tallies (duplicates, reports dropped for missing values) on to its key's next
window or, with none open, to the key itself (:func:`db.windows.add_key_tally`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select, update

from db.models import PendingReport, StationControl, Watermark, Window
from db.session import Database, rowcount
from db.windows import WindowPolicy, add_key_tally


def due_windows(db: Database, policy: WindowPolicy, idle_s: float, now: datetime) -> list[str]:
    """Open windows of the policy's feed that should close now: watermark passed, full, or idle (not of
    paused stations)."""
    with db.read() as s:
        wms = dict(s.execute(select(Watermark.key, Watermark.event_time)).tuples().all())
        rows = s.execute(select(Window).where(Window.state == "open", Window.feed == policy.feed)).scalars().all()
        prefix = "" if policy.feed == "default" else f"{policy.feed}/"
        paused = {f"{prefix}station:{st}" for st in s.execute(
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


def event_span(db: Database, pool_ids: list[int]) -> tuple[datetime | None, datetime | None]:
    """Earliest and latest event time of these pool reports (a manifest's true event-time span)."""
    first: datetime | None = None
    last: datetime | None = None
    with db.read() as s:
        for i in range(0, len(pool_ids), 1000):
            lo, hi = s.execute(select(func.min(PendingReport.event_time), func.max(PendingReport.event_time))
                               .where(PendingReport.id.in_(pool_ids[i:i + 1000]))).one()
            if lo is not None:
                lo, hi = utc(lo), utc(hi)
                first = lo if first is None or lo < first else first
                last = hi if last is None or hi > last else last
    return first, last


def utc(t: datetime) -> datetime:
    """Aggregates bypass the column type on SQLite (naive or text): back to aware UTC."""
    if isinstance(t, str):
        t = datetime.fromisoformat(t)
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def carry_duplicates(db: Database, window_id: str, key: str) -> bool:
    """Move a window's tallies (duplicates, reports dropped for missing values) to the key's latest open
    window (the window closed without a release).

    When the key has no open window, they move to the key's ``pending_duplicates`` / ``pending_dropped``
    (its next release counts them; :func:`db.windows.add_key_tally`) and False is returned.
    """
    with db.unit() as s:
        target = s.execute(select(Window.id).where(Window.key == key, Window.state == "open", Window.id != window_id)
                           .order_by(Window.start.desc(), Window.seq.desc()).limit(1)).scalar_one_or_none()
        row = s.execute(select(Window.duplicates, Window.dropped, Window.start).where(Window.id == window_id)).first()
        if row is None or not (row.duplicates or row.dropped):
            return False
        n, x = int(row.duplicates or 0), int(row.dropped or 0)
        if target is None:
            add_key_tally(s, key, row.start, duplicates=n, dropped=x)
            s.execute(update(Window).where(Window.id == window_id).values(duplicates=0, dropped=0))
            return False
        moved = rowcount(s.execute(update(Window).where(Window.id == target, Window.state == "open")
                                   .values(duplicates=Window.duplicates + n, dropped=Window.dropped + x)))
        if moved:
            s.execute(update(Window).where(Window.id == window_id).values(duplicates=0, dropped=0))
        return bool(moved)
