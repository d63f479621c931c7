"""Window state after ingest: which windows are due, the true event span of a release's reports, and
moving a closed window's tallies (duplicates, reports dropped for missing values) on to its key's next
window or, with none open, to the key itself (:func:`db.windows.add_key_tally`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, select, update

from db.batches import key_batches
from db.claims import CARRIED_STATES
from db.models import PendingReport, StationControl, Watermark, Window
from db.session import Database, insert_ignore, rowcount, utc
from db.windows import WindowPolicy, add_key_tally


def due_windows(db: Database, policy: WindowPolicy, idle_s: float, now: datetime) -> list[str]:
    """Open windows of the policy's feed that should close now (not of paused stations).

    The closing rules, in order:

    * full (``cap`` reports) or flushed by the operator: due;
    * a batch of the window's key is being pushed (begun, not ended) or has ended and its windows are not
      merged yet: not due, whatever the watermark or the time since the key's last input (the rows of a
      push still on their way to a slow worker must not be cut off: :mod:`db.batches`);
    * complete: a batch of the key ended after all the window's input (and the windows it completed were
      merged): due;
    * otherwise (input from producers that send no markers): due once the key's watermark passed the
      window's end by ``lateness_s``, or after ``idle_s`` seconds without input.
    """
    with db.read() as s:
        wms = dict(s.execute(select(Watermark.key, Watermark.event_time)).tuples().all())
        rows = s.execute(select(Window).where(Window.state == "open", Window.feed == policy.feed)).scalars().all()
        prefix = "" if policy.feed == "default" else f"{policy.feed}/"
        paused = {f"{prefix}station:{st}" for st in s.execute(
            select(StationControl.station_id).where(StationControl.paused.is_(True))).scalars()}
        batches = key_batches(s, policy.feed, {w.key for w in rows}, now)
    lateness = timedelta(seconds=policy.lateness_s)
    out = []
    for w in rows:
        if w.key in paused:
            continue
        b = batches.get(w.key)
        if w.count >= policy.cap or w.flush:
            out.append(w.id)
        elif b is not None and (b.running or b.unmerged):
            continue  # its batch is still being pushed (or about to be merged): a late row's watermark closes nothing
        elif ((b is not None and b.ended_at is not None and w.last_input_at <= b.ended_at)
              or (wms.get(w.key) is not None and wms[w.key] >= w.end + lateness)
              or (now - w.last_input_at).total_seconds() >= idle_s):
            out.append(w.id)
    return out


def request_flush(db: Database, policy: WindowPolicy, keys: list[str] | None, now: datetime) -> list[dict[str, object]]:
    """Release each key's reports now, whatever ``min_release_rows`` says (still at least k): its open windows
    are flagged ``flush`` (due at the next tick); a key with none but with reports waiting in carried windows
    gets a new open window, flagged, that adopts them when claimed. ``keys`` None: every key of the feed
    with reports waiting. Returns, per key, the windows flagged and the reports they will draw from."""
    open_w, waiting = Window.state == "open", PendingReport.state == "pending"
    out: list[dict[str, object]] = []
    with db.unit() as s:
        mine = Window.feed == policy.feed
        counts = dict(s.execute(select(PendingReport.window_key, func.count()).join(
            Window, PendingReport.window_id == Window.id).where(waiting, mine, Window.state.in_((*CARRIED_STATES,
                                                                                               "open")))
            .group_by(PendingReport.window_key)).tuples().all())
        for key in sorted(counts) if keys is None else keys:
            flagged = list(s.execute(select(Window.id).where(Window.key == key, mine, open_w)).scalars())
            if not flagged and counts.get(key):
                last = s.execute(select(Window.start, func.max(Window.seq)).where(Window.key == key, mine)
                                 .group_by(Window.start).order_by(Window.start.desc()).limit(1)).first()
                start = utc(last[0]) if last is not None else policy.start_of(now)
                seq = int(last[1]) + 1 if last is not None else 0
                wid = policy.window_id(key, start, seq)
                insert_ignore(s, Window.__table__, [{
                    "id": wid, "key": key, "start": start, "end": start + timedelta(seconds=policy.size_s), "seq": seq,
                    "state": "open", "count": 0, "duplicates": 0, "last_input_at": now, "created_at": now,
                    "feed": policy.feed, "flush": True}], ["id"])
                flagged = [wid]
            s.execute(update(Window).where(Window.id.in_(flagged), open_w).values(flush=True))
            out.append({"key": key, "windows": flagged, "pending": int(counts.get(key, 0))})
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
