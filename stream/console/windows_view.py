"""One window's page in the console (``/windows/{id}``, JSON ``/api/windows/{id}``): its state, why it is held
or carried (scrubbed of record values like every reason the console shows), its release and its audit trail."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from db import console_queries as q
from db.models import PendingReport, Window
from stream.console.redact import scrub


def window_detail(svc: Any, window_id: str) -> dict[str, Any] | None:
    """The window ``window_id`` as the windows list shows it, plus its release id and audit entries."""
    with svc._read() as s:
        w = s.get(Window, window_id)
        if w is None:
            return None
        pending = s.execute(select(func.count()).select_from(PendingReport).where(
            PendingReport.window_id == window_id, PendingReport.state == "pending")).scalar_one()
        audit = q.audit_entries(s, subject=window_id, limit=100)
    words = svc.scrub_words()
    for a in audit:
        a["detail"] = svc._scrub_detail(a.get("detail"))
    return {"id": w.id, "feed": w.feed, "key": w.key, "start": w.start.isoformat(), "end": w.end.isoformat(),
            "seq": w.seq, "state": w.state, "close_reason": w.close_reason, "reason": scrub(w.hold_reason, words),
            "count": w.count, "still_pending": int(pending), "release_id": w.release_id,
            "closed_at": w.closed_at.isoformat() if w.closed_at else None, "audit": audit}
