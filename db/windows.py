"""Window assignment of accepted reports, by each report's own event time.

* a report's window is the tumbling window of its key that contains its event time, whatever the
  key's watermark: a backfill (history pushed out of order) is windowed by when each event
  happened, never lumped into the latest open window;
* a window with ``count >= cap`` is full, and so is one that is closing or closed: further reports
  of that period go to the next sequence number of the same period (``seq + 1``), so a late report
  of an already released day opens a new window of that day (due at once, as its watermark has
  passed; too few reports for k and it is carried, its reports waiting for the key's next window);
* a push is a batch (:mod:`db.batches`): while a key's batch runs its windows close neither by the
  watermark nor by idling; when it ends, the windows it completed are merged and close; a window
  with fewer reports to release than ``min_release_rows`` is carried, not published;
* at most ``max_new_windows_per_hour`` windows are created per key and hour: a report that would
  need one more is refused (dead-lettered as ``window-rate``), which bounds the work one station can
  cause by inventing event times. A catch-up export is the exception: while a push (a batch) of a
  station that an operator registered before the push began is running, that station's windows are
  counted against the batch instead, at most ``max_backfill_windows`` since the batch began (ten
  years of daily windows by default), so a station's real history is accepted in one push; a station
  registered on first sight, or not at all, and input without batch markers keep the hourly bound;
* duplicates and corrections are tallied on the key's latest open window, so the manifest of that
  window's release counts them (a window closed without a release passes its tally on to the key's
  next open window); when the key has no open window, they wait on the key's watermark row
  (``pending_duplicates``) and the key's next release counts them: every duplicate is in a manifest,
  or waiting for the key's next one (and always in the per-station counters). Reports dropped for a
  missing value (``on_missing = "drop"``, also dead-lettered as ``missing-value`` so the station can
  fix them) are tallied the same way (``dropped``, ``pending_dropped``): the manifest says how many
  reports its window lost to missing values.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from db.models import Batch, Station, Watermark, Window
from db.session import insert_ignore, rowcount, utc
from db.window_policy import WindowPolicy

__all__ = ["BACKFILL_MAX_S", "WindowPolicy", "WindowRouter", "add_key_tally"]

BACKFILL_MAX_S = 86_400
"""A batch begun longer ago than this opens no more windows as a catch-up (db.batches.BATCH_MAX_S: a batch
that old holds no window either)."""


class WindowRouter:
    """Assigns reports of one ingest transaction to windows, creating windows as needed."""

    def __init__(self, session: Session, policy: WindowPolicy, now: datetime) -> None:
        self.s, self.policy, self.now = session, policy, now
        self.added: dict[str, int] = defaultdict(int)
        self.tallies: dict[str, dict[str, int]] = defaultdict(lambda: {"duplicates": 0, "dropped": 0})
        self.key_tallies: dict[str, tuple[dict[str, int], datetime]] = {}  # keys with no open window: (tally, a time)
        self.watermarks: dict[str, datetime] = {}
        self.current: dict[tuple[str, datetime], Window] = {}
        self.latest_open: dict[str, Window | None] = {}
        self.created: dict[str, int] = {}  # windows of each key created in the last hour (incl. this unit)
        self.limit: dict[str, int] = {}  # ... or, for a registered station's catch-up push, since it began
        self.loaded: set[tuple[str, datetime]] = set()  # (key, start) read by prefetch, window or none
        self.wm_read: set[str] = set()  # keys whose watermark prefetch read (present or not)
        self.opened = False  # a window was created by this unit

    def prefetch(self, pairs: set[tuple[str, datetime]]) -> None:
        """Read at once what routing reports of these (key, window start) pairs needs: each pair's latest
        window, each key's watermark, and for keys with no window yet their window-creation allowance.
        The same rows a report-by-report read would give, in a few statements per batch instead of about
        eight per new key (a batch of 3,000 new station ids took 3,000 x 8 round trips)."""
        keys = sorted({k for k, _ in pairs})
        starts = sorted({t for _, t in pairs})
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            for w in self.s.execute(select(Window).where(Window.key.in_(chunk), Window.start.in_(starts))).scalars():
                pair = (w.key, utc(w.start))
                if pair in pairs and ((cur := self.current.get(pair)) is None or w.seq > cur.seq):
                    self.current[pair] = w
            for wm in self.s.execute(select(Watermark).where(Watermark.key.in_(chunk))).scalars():
                self.watermarks.setdefault(wm.key, wm.event_time)
        self.loaded |= pairs
        self.wm_read |= set(keys)
        fresh = sorted({k for k, t in pairs if (k, t) not in self.current} - set(self.created))
        for i in range(0, len(fresh), 500):  # keys that will open a window: their allowance (_may_create)
            chunk = fresh[i:i + 500]
            began = self._backfills_since(chunk)
            hourly = [k for k in chunk if k not in began]
            counts = dict(self.s.execute(select(Window.key, func.count()).where(
                Window.key.in_(hourly), Window.created_at >= self.now - timedelta(hours=1))
                .group_by(Window.key)).tuples().all()) if hourly else {}
            for key in hourly:
                self.created[key] = int(counts.get(key, 0))
                self.limit[key] = self.policy.max_new_windows_per_hour
            # a registered station's catch-up push: counted since it began, one key at a time (rare)

    def _backfills_since(self, keys: list[str]) -> dict[str, datetime]:
        """:meth:`_backfill_since` of several keys in one statement (keys without a catch-up left out)."""
        if self.policy.max_backfill_windows == 0 or not keys:
            return {}
        registered = (Station.feed == Batch.feed) & (Station.station_id == Batch.station_id)
        rows = self.s.execute(
            select(Batch.key, func.max(Batch.begun_at)).join(Station, registered)
            .where(Batch.feed == self.policy.feed, Batch.key.in_(keys), Batch.ended_at.is_(None),
                   Batch.begun_at >= self.now - timedelta(seconds=BACKFILL_MAX_S), Station.source == "operator",
                   Station.added_at < Batch.begun_at).group_by(Batch.key)).tuples().all()
        return {key: t for key, t in rows if t is not None}

    def advance(self, key: str, t: datetime) -> None:
        wm = self.watermark(key)
        if wm is None or t > wm:
            self.watermarks[key] = t

    def watermark(self, key: str) -> datetime | None:
        if key not in self.watermarks and key not in self.wm_read:
            row = self.s.get(Watermark, key)
            if row is not None:
                self.watermarks[key] = row.event_time
        return self.watermarks.get(key)

    def save_watermarks(self) -> None:
        for key, t in self.watermarks.items():
            stmt = update(Watermark).where(Watermark.key == key, Watermark.event_time < t).values(event_time=t)
            # no session sync: checking each update against every object the session holds made a batch of
            # many new keys (a flood of station ids) quadratic; nothing reads these objects afterwards
            if rowcount(self.s.execute(stmt.execution_options(synchronize_session=False))) == 0:
                insert_ignore(self.s, Watermark.__table__, [{"key": key, "event_time": t}], ["key"])

    def _load(self, key: str, start: datetime) -> Window | None:
        """Latest-sequence window of (key, start)."""
        return self.s.execute(select(Window).where(Window.key == key, Window.start == start)
                              .order_by(Window.seq.desc()).limit(1)).scalar_one_or_none()

    def _may_create(self, key: str) -> bool:
        if key not in self.created:
            began = self._backfill_since(key)
            self.limit[key] = self.policy.max_backfill_windows if began else self.policy.max_new_windows_per_hour
            since = began or self.now - timedelta(hours=1)
            self.created[key] = int(self.s.execute(select(func.count()).select_from(Window).where(
                Window.key == key, Window.created_at >= since)).scalar_one())
        return self.created[key] < self.limit[key]

    def _backfill_since(self, key: str) -> datetime | None:
        """When the running batch of ``key`` began, if its station is one an operator registered before that
        (the key's windows then count against the batch: a catch-up export); None otherwise."""
        if self.policy.max_backfill_windows == 0:
            return None
        registered = (Station.feed == Batch.feed) & (Station.station_id == Batch.station_id)
        running = (Batch.feed == self.policy.feed, Batch.key == key, Batch.ended_at.is_(None),
                   Batch.begun_at >= self.now - timedelta(seconds=BACKFILL_MAX_S))
        return self.s.execute(
            select(Batch.begun_at).join(Station, registered)
            .where(*running, Station.source == "operator", Station.added_at < Batch.begun_at)
            .order_by(Batch.begun_at.desc()).limit(1)).scalar_one_or_none()

    def _create(self, key: str, start: datetime, seq: int) -> Window:
        wid = self.policy.window_id(key, start, seq)
        inserted = insert_ignore(self.s, Window.__table__, [{
            "id": wid, "key": key, "start": start, "end": start + timedelta(seconds=self.policy.size_s),
            "seq": seq, "state": "open", "count": 0, "duplicates": 0, "last_input_at": self.now,
            "created_at": self.now, "feed": self.policy.feed}], ["id"])
        self.created[key] = self.created.get(key, 0) + int(bool(inserted))
        self.opened = self.opened or bool(inserted)
        row = self.s.get(Window, wid, populate_existing=True)
        assert row is not None
        return row

    def _has_room(self, w: Window) -> bool:
        return w.state == "open" and w.count + self.added[w.id] < self.policy.cap

    def _in_period(self, key: str, start: datetime) -> Window | None:
        w = self.current.get((key, start))
        if w is None or not self._has_room(w):
            w = w if w is not None or (key, start) in self.loaded else self._load(key, start)
            while w is None or not self._has_room(w):
                if not self._may_create(key):
                    return None
                w = self._create(key, start, 0 if w is None else w.seq + 1)
            self.current[(key, start)] = w
        return w

    def may_be_due(self) -> bool:
        """Whether a window may have fallen due through this unit: one it routed to reached the cap, or it
        opened a window (a later period, or the next window of a full one), which may move a key's
        watermark past an earlier window's end. Other windows fall due with time (idle, lateness)."""
        return self.opened or any(w.count + self.added[w.id] >= self.policy.cap
                                  for w in self.current.values() if self.added.get(w.id))

    def route(self, key: str, event_time: datetime) -> Window | None:
        """The window of the report's own event time (None: the key's window-creation rate is exhausted)."""
        w = self._in_period(key, self.policy.start_of(event_time))
        if w is not None:
            self.added[w.id] += 1
        return w

    def tally_duplicate(self, key: str, event_time: datetime) -> bool:
        """Count a duplicate or correction on the key's latest open window; False when the key has none
        (no window is opened for a duplicate: it waits on the key's ``pending_duplicates`` tally)."""
        return self._tally(key, event_time, "duplicates")

    def tally_dropped(self, key: str, at: datetime) -> bool:
        """Count a report dropped for a missing value (``on_missing = "drop"``) like a duplicate."""
        return self._tally(key, at, "dropped")

    def _tally(self, key: str, at: datetime, what: str) -> bool:
        if key not in self.latest_open:
            self.latest_open[key] = self.s.execute(
                select(Window).where(Window.key == key, Window.state == "open")
                .order_by(Window.start.desc(), Window.seq.desc()).limit(1)).scalar_one_or_none()
        w = self.latest_open[key]
        if w is None:
            tally = self.key_tallies.setdefault(key, ({"duplicates": 0, "dropped": 0}, at))[0]
            tally[what] += 1
            return False
        self.tallies[w.id][what] += 1
        return True

    def commit_counts(self) -> list[str]:
        """Apply the count increments; returns window ids that were closed meanwhile (re-route)."""
        lost = []
        for wid in sorted(set(self.added) | set(self.tallies)):
            n = self.added.get(wid, 0)
            t = self.tallies.get(wid, {})
            d, x = t.get("duplicates", 0), t.get("dropped", 0)
            if n == 0 and d == 0 and x == 0:
                continue
            values: dict[str, Any] = {"count": Window.count + n, "duplicates": Window.duplicates + d,
                                      "dropped": Window.dropped + x}
            if n:  # duplicates and drops alone do not keep a window from going idle
                values["last_input_at"] = self.now
            res = self.s.execute(update(Window).where(Window.id == wid, Window.state == "open").values(**values)
                                 .execution_options(synchronize_session=False))  # as in save_watermarks
            if rowcount(res) == 0:
                lost.append(wid)
        if not lost:
            for key, (tally, at) in sorted(self.key_tallies.items()):
                add_key_tally(self.s, key, at, **tally)
        return lost


def add_key_tally(s: Session, key: str, at: datetime, duplicates: int = 0, dropped: int = 0) -> None:
    """Add to the key's tallies of duplicates / dropped reports waiting for its next release (inside ``s``)."""
    if not duplicates and not dropped:
        return
    stmt = update(Watermark).where(Watermark.key == key).values(
        pending_duplicates=Watermark.pending_duplicates + duplicates,
        pending_dropped=Watermark.pending_dropped + dropped)
    if rowcount(s.execute(stmt)) == 0:
        insert_ignore(s, Watermark.__table__, [{"key": key, "event_time": at, "pending_duplicates": 0,
                                                "pending_dropped": 0}], ["key"])
        s.execute(stmt)
