"""Claims on shared work are leases renewed by their holder (a heartbeat), never plain timeouts.

Two kinds of claim:

* **closing a window**: ``windows.state = 'closing'``, ``claimed_by`` and ``lease_until``. The claim
  also *adopts* the key's carried reports (pending reports of its closed windows) into the claimed
  window in the same transaction, so a carried report belongs to exactly one closing window at a
  time: two windows of one key closing concurrently never draw the same report.
* **publishing a stored release**: ``releases.publish_claimed_by`` and ``publish_lease_until``.

A holder renews its leases every ``lease / 3`` (:meth:`ClaimRepository.renew`); a claim expires only
when its holder stops renewing (it died or lost the database), and is then taken over within a lease.
The ledger writes of a claimed window are *fenced*: they happen only while the window is still
claimed by the writer (:class:`LostClaim` otherwise), so a worker whose lease was taken over never
writes or publishes that window again. A holder whose work failed transiently gives its claim up at
once (:meth:`ClaimRepository.give_up`) so the window is retried without waiting for the lease.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, or_, select, update
from sqlalchemy.orm import QueryableAttribute, Session

from db.models import PendingReport, Release, Window
from db.session import Database, rowcount
from db.states import WindowState

# closed windows whose pending reports wait for the next
CARRIED_STATES = (WindowState.CARRIED, WindowState.RELEASED, WindowState.EMPTY, WindowState.MERGED)


class LostClaim(Exception):
    """The window is no longer claimed by this worker (its lease expired and another took it over)."""


def _expired(lease_col: QueryableAttribute[datetime | None], claimed_col: QueryableAttribute[datetime | None],
             now: datetime, lease_s: float) -> ColumnElement[bool]:
    """Lease ran out (rows without a lease, from before leases existed, expire ``lease_s`` after the claim)."""
    return or_(lease_col < now, and_(lease_col.is_(None), claimed_col < now - timedelta(seconds=lease_s)))


def fence(session: Session, window_id: str, worker: str) -> None:
    """Raise :class:`LostClaim` unless ``worker`` still holds the claim on the window (inside a unit)."""
    held = session.execute(select(Window.id).where(Window.id == window_id, Window.state == WindowState.CLOSING,
                                                   Window.claimed_by == worker).with_for_update()).first()
    if held is None:
        raise LostClaim(f"window {window_id} is no longer claimed by {worker}")


def adopt_carried(session: Session, window_id: str, key: str) -> int:
    """Move the key's carried reports (pending, in closed windows) into ``window_id``; returns how many."""
    carried = select(Window.id).where(Window.key == key, Window.state.in_(CARRIED_STATES))
    res = session.execute(update(PendingReport).where(
        PendingReport.window_key == key, PendingReport.state == "pending", PendingReport.window_id.in_(carried))
        .values(window_id=window_id).execution_options(synchronize_session=False))
    return int(rowcount(res) or 0)


class ClaimRepository:
    """Window and publish claims (mixed into :class:`db.releases.ReleaseRepository`)."""

    db: Database

    def claim_window(self, window_id: str, worker: str, now: datetime, lease_s: float,
                     reason: str) -> Window | None:
        """Claim a window that is open, or closing under an expired lease; adopt its key's carried reports."""
        with self.db.unit() as s:
            res = s.execute(update(Window).where(
                Window.id == window_id,
                or_(Window.state == WindowState.OPEN, (Window.state == WindowState.CLOSING)
                    & _expired(Window.lease_until, Window.claimed_at, now, lease_s)))
                .values(state=WindowState.CLOSING, claimed_by=worker, claimed_at=now,
                        lease_until=now + timedelta(seconds=lease_s), close_reason=reason))
            if rowcount(res) != 1:
                return None
            window = s.get(Window, window_id)
            assert window is not None
            adopt_carried(s, window_id, window.key)
            return window

    def stale_closing(self, now: datetime, lease_s: float, feed: str | None = None) -> list[str]:
        """Closing windows (of ``feed``, or of every feed) whose holder stopped renewing its lease."""
        with self.db.read() as s:
            stmt = select(Window.id).where(
                Window.state == WindowState.CLOSING, _expired(Window.lease_until, Window.claimed_at, now, lease_s))
            return list(s.execute(stmt if feed is None else stmt.where(Window.feed == feed)).scalars())

    def renew(self, worker: str, windows: Iterable[str], releases: Iterable[str], now: datetime,
              lease_s: float) -> tuple[set[str], set[str]]:
        """Extend this worker's leases on ``windows`` (closing) and ``releases`` (publishing).

        Returns the windows and releases whose claim this worker has lost (taken over by another)."""
        until = now + timedelta(seconds=lease_s)
        windows, releases = sorted(set(windows)), sorted(set(releases))
        with self.db.unit() as s:
            if windows:
                s.execute(update(Window).where(Window.id.in_(windows), Window.state == WindowState.CLOSING,
                                               Window.claimed_by == worker).values(lease_until=until))
            if releases:
                s.execute(update(Release).where(Release.id.in_(releases), Release.state == "stored",
                                                Release.publish_claimed_by == worker)
                          .values(publish_lease_until=until))
            lost_w = set(s.execute(select(Window.id).where(
                Window.id.in_(windows), Window.claimed_by != worker)).scalars()) if windows else set()
            lost_r = set(s.execute(select(Release.id).where(
                Release.id.in_(releases), Release.publish_claimed_by != worker)).scalars()) if releases else set()
        return lost_w, lost_r

    def give_up(self, window_id: str, worker: str, now: datetime) -> bool:
        """End this worker's lease on a window now (its release failed): it is retried at once."""
        with self.db.unit() as s:
            res = s.execute(update(Window).where(Window.id == window_id, Window.state == WindowState.CLOSING,
                                                 Window.claimed_by == worker)
                            .values(lease_until=now - timedelta(microseconds=1)))
            return bool(rowcount(res))

    # --- publishing --------------------------------------------------------------------------------
    def claim_unpublished(self, worker: str, now: datetime, lease_s: float,
                          skip_windows: frozenset[str] = frozenset(), feed: str | None = None) -> list[str]:
        """Stored releases (of ``feed``'s windows, or of every feed) to (re-)publish: this worker's own,
        unclaimed or with an expired lease, except releases of ``skip_windows`` (windows the caller is
        closing and will publish itself)."""
        mine = or_(Release.publish_claimed_by == worker, Release.publish_claimed_by.is_(None),
                   _expired(Release.publish_lease_until, Release.publish_claimed_at, now, lease_s))
        stmt = select(Release.id, Release.window_id).where(Release.state == "stored", mine)
        if feed is not None:
            stmt = stmt.where(Release.window_id.in_(select(Window.id).where(Window.feed == feed)))
        with self.db.read() as s:
            found = s.execute(stmt.order_by(Release.created_at)).all()
        ids = [rid for rid, window_id in found if window_id not in skip_windows]
        claimed: list[str] = []
        if not ids:
            return claimed
        with self.db.unit() as s:
            for rid in ids:
                res = s.execute(update(Release).where(Release.id == rid, Release.state == "stored", mine)
                                .values(publish_claimed_by=worker, publish_claimed_at=now,
                                        publish_lease_until=now + timedelta(seconds=lease_s)))
                if rowcount(res) == 1:
                    claimed.append(rid)
        return claimed
