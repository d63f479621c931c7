"""Worker heartbeats and assigned partitions (read by the operator console and the tests)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select, update

from db.models import WorkerStatus
from db.session import Database, insert_ignore, rowcount


def heartbeat(db: Database, worker: str, now: datetime, partitions: list[int] | None = None,
              stats: dict[str, Any] | None = None) -> None:
    values: dict[str, Any] = {"heartbeat_at": now}
    if partitions is not None:
        values["partitions"] = sorted(partitions)
    if stats is not None:
        values["stats"] = stats
    with db.unit() as s:
        if rowcount(s.execute(update(WorkerStatus).where(WorkerStatus.id == worker).values(**values))) == 0:
            insert_ignore(s, WorkerStatus.__table__, [{"id": worker, "started_at": now, "heartbeat_at": now,
                                                      "partitions": sorted(partitions or []),
                                                      "stats": stats or {}}], ["id"])


def workers(db: Database) -> list[dict[str, Any]]:
    with db.read() as s:
        rows = s.execute(select(WorkerStatus).order_by(WorkerStatus.id)).scalars().all()
    return [{"id": w.id, "started_at": w.started_at, "heartbeat_at": w.heartbeat_at,
             "partitions": list(w.partitions or []), "stats": dict(w.stats or {})} for w in rows]
