"""The delay mode's ledger side: each key's CASTLE state, its owner claim and its release windows.

Table ``castle_states``: one row per window key in delay mode (:mod:`stream.worker.delay`): the JSON state
of its CASTLE stream (waiting reports, open clusters, counters, generator) and a ``version`` bumped by every
write. The state is written in the same transaction as the release of the reports that left the stream
(:meth:`db.releases.ReleaseRepository.store`'s ``within``), so a worker killed at any point resumes from a
state that matches the ledger: a report is either waiting in the saved state or released / suppressed /
blocked in the pool, never both and never neither.

Ownership reuses the window claims (:mod:`db.claims`): the key's *owner window* ``castle:<key>`` is claimed
like a window (a lease renewed by its holder); every state write is fenced by that claim and by the version
read. Each group of departures is released under a window of its own, ``castle:<key>:<n>``, created in the
release transaction (a release belongs to one window). These windows have the key ``castle>`` + key, so
they never count against the key's window-creation rate nor are taken for its open windows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Integer, String, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.claims import fence
from db.models import Base, Batch, PendingReport, UTCDateTime, Window, utcnow
from db.releases import Candidate, LostClaim
from db.session import Database, insert_ignore, rowcount
from db.states import WindowState

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""Start of the delay mode's windows (no report's event time: the intake refuses times that old)."""


class CastleStateRow(Base):
    """A window key's CASTLE stream state (delay mode)."""

    __tablename__ = "castle_states"

    key: Mapped[str] = mapped_column(String(120), primary_key=True)
    feed: Mapped[str] = mapped_column(String(32), default="default")
    version: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[dict[str, Any]] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


def owner_id(key: str) -> str:
    """The owner window of a key's delay state."""
    return f"castle:{key}"


def group_id(key: str, n: int) -> str:
    """The window the ``n``-th release of a key's departures is stored under."""
    return f"castle:{key}:{n}"


class CastleLedger:
    """Reads and fenced writes of the delay mode (a thin layer over :class:`~db.session.Database`)."""

    def __init__(self, db: Database, feed: str) -> None:
        self.db, self.feed = db, feed

    def keys(self) -> list[str]:
        """Window keys of this feed with pending reports or a saved state (the keys to serve)."""
        with self.db.read() as s:
            pending = s.execute(select(PendingReport.window_key).join(Window, PendingReport.window_id == Window.id)
                                .where(PendingReport.state == "pending", Window.feed == self.feed)
                                .distinct()).scalars().all()
        return sorted(set(pending))

    def ensure_owner(self, key: str, now: datetime) -> None:
        """Create the key's owner window (open, unclaimed) unless it exists."""
        with self.db.unit() as s:
            insert_ignore(s, Window.__table__, [{
                "id": owner_id(key), "key": "castle>" + key, "start": EPOCH, "end": EPOCH, "seq": 0,
                "state": WindowState.OPEN, "count": 0, "duplicates": 0, "last_input_at": now, "created_at": now,
                "feed": self.feed}], ["id"])

    def load(self, key: str) -> tuple[dict[str, Any] | None, int]:
        """The key's saved state and its version (None, 0 before the first write)."""
        with self.db.read() as s:
            row = s.get(CastleStateRow, key)
            return (None, 0) if row is None else (dict(row.state), int(row.version))

    def batch_end(self, key: str) -> float | None:
        """When the key's latest push (batch) ended, in epoch seconds, if none of its pushes is running now."""
        with self.db.read() as s:
            rows = s.execute(select(Batch.ended_at).where(Batch.feed == self.feed, Batch.key == key)).scalars().all()
        if not rows or any(t is None for t in rows):
            return None
        return max(t for t in rows if t is not None).timestamp()

    def pending(self, key: str, skip: set[int]) -> list[Candidate]:
        """Pending reports of ``key`` not in ``skip`` (those already waiting in the state), oldest first."""
        p = PendingReport
        with self.db.read() as s:
            rows = s.execute(select(*Candidate.columns()).where(p.window_key == key, p.state == "pending")
                             .order_by(p.id)).all()
        return [Candidate.of(r) for r in rows if r[0] not in skip]

    def write(self, s: Session, key: str, worker: str, state: dict[str, Any], version: int, now: datetime) -> None:
        """Save the state in the caller's transaction, fenced by the owner claim and by ``version``
        (the version read): :class:`LostClaim` when another worker took the key over meanwhile."""
        fence(s, owner_id(key), worker)
        if version == 0:
            if not insert_ignore(s, CastleStateRow.__table__, [{"key": key, "feed": self.feed, "version": 1,
                                                                "state": state, "updated_at": now}], ["key"]):
                raise LostClaim(f"delay state of {key} was written by another worker")
            return
        res = s.execute(update(CastleStateRow).where(CastleStateRow.key == key, CastleStateRow.version == version)
                        .values(state=state, version=version + 1, updated_at=now))
        if rowcount(res) != 1:
            raise LostClaim(f"delay state of {key} was written by another worker")

    def save(self, key: str, worker: str, state: dict[str, Any], version: int, now: datetime) -> None:
        """:meth:`write` in a transaction of its own (reports entered the stream, none left)."""
        with self.db.unit() as s:
            self.write(s, key, worker, state, version, now)

    def open_group(self, s: Session, key: str, n: int, worker: str, now: datetime) -> None:
        """Create the window of the key's ``n``-th release, claimed by ``worker`` (in the release transaction)."""
        s.execute(Window.__table__.insert().values(
            id=group_id(key, n), key="castle>" + key, start=EPOCH, end=EPOCH, seq=n, state=WindowState.CLOSING,
            count=0, duplicates=0, last_input_at=now, created_at=now, claimed_by=worker, claimed_at=now,
            lease_until=now, close_reason="delay", feed=self.feed))
