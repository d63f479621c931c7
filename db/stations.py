"""The station registry: which station ids the service accepts reports from.

Production mode accepts reports of registered stations only (others are dead-lettered as
``unknown-station``); embedded mode registers a station the first time it sends a valid report
(``source = 'first-sight'``). Operators manage it with ``anonstream stations add|list|remove``.
Each feed (``stream/config/feeds.py``) has its own registry; a deployment with one feed uses ``default``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from db.models import AuditEntry, Station
from db.session import Database, insert_ignore

UNREGISTERED = "(unregistered)"  # the DLQ counters' station for messages of unregistered stations


def registered_in(s: Session, station_ids: Iterable[str], feed: str = "default") -> set[str]:
    """Those of ``station_ids`` that are registered with ``feed`` (inside the caller's transaction)."""
    ids = sorted(set(station_ids))
    found: set[str] = set()
    for i in range(0, len(ids), 500):
        found.update(s.execute(select(Station.station_id).where(
            Station.feed == feed, Station.station_id.in_(ids[i:i + 500]))).scalars())
    return found


def register_seen(s: Session, station_ids: Iterable[str], now: datetime, feed: str = "default") -> None:
    """Register stations with ``feed`` on first sight (embedded mode), inside the caller's transaction."""
    rows = [{"feed": feed, "station_id": st, "source": "first-sight", "added_at": now, "added_by": None,
             "note": None} for st in sorted(set(station_ids))]
    if rows:
        insert_ignore(s, Station.__table__, rows, ["feed", "station_id"])


class StationRegistry:
    """Operator-facing access to the registry (CLI and console)."""

    def __init__(self, db: Database, feed: str = "default") -> None:
        self.db, self.feed = db, feed

    def add(self, station_ids: list[str], actor: str, now: datetime, note: str | None = None) -> list[str]:
        """Register stations; returns the ids that were new."""
        with self.db.unit() as s:
            known = registered_in(s, station_ids, self.feed)
            new = [st for st in dict.fromkeys(station_ids) if st not in known]
            if new:
                insert_ignore(s, Station.__table__, [
                    {"feed": self.feed, "station_id": st, "source": "operator", "added_at": now, "added_by": actor,
                     "note": note} for st in new], ["feed", "station_id"])
                s.add(AuditEntry(at=now, actor=actor, action="stations-added", subject=None,
                                 detail={"stations": new} | ({"feed": self.feed} if self.feed != "default" else {})))
        return new

    def remove(self, station_ids: list[str], actor: str, now: datetime) -> list[str]:
        """Unregister stations (their pending reports stay; new reports are refused); returns those removed."""
        with self.db.unit() as s:
            known = sorted(registered_in(s, station_ids, self.feed))
            if known:
                s.execute(delete(Station).where(Station.feed == self.feed, Station.station_id.in_(known)))
                s.add(AuditEntry(at=now, actor=actor, action="stations-removed", subject=None,
                                 detail={"stations": known} | ({"feed": self.feed} if self.feed != "default" else {})))
        return known

    def list(self) -> list[dict[str, Any]]:
        with self.db.read() as s:
            rows = s.execute(select(Station).where(Station.feed == self.feed)
                             .order_by(Station.station_id)).scalars().all()
        return [{"station_id": r.station_id, "source": r.source, "added_at": r.added_at, "added_by": r.added_by,
                 "note": r.note} for r in rows]
