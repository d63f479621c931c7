"""Read-only ledger queries per feed (several feeds in one deployment, ``stream/config/feeds.py``).

A window belongs to one feed (``windows.feed``); its pending reports and its release belong to the
same feed. Aggregates only, like :mod:`db.console_queries`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from db.models import Counter, PendingReport, Release, Window


def _aware(t: datetime | None) -> datetime | None:
    return None if t is None else (t.replace(tzinfo=UTC) if t.tzinfo is None else t)


def feed_names(s: Session) -> list[str]:
    """Feeds that have windows in the ledger."""
    return sorted(s.execute(select(Window.feed).distinct()).scalars())


def feed_of_release(s: Session, release_id: str) -> str | None:
    """The feed of a stored release (None when there is no such release)."""
    return s.execute(select(Window.feed).join(Release, Release.window_id == Window.id)
                     .where(Release.id == release_id)).scalar_one_or_none()


def feed_summary(s: Session, now: datetime, feed: str | None = None) -> list[dict[str, Any]]:
    """Per feed (or only ``feed``): reports by pool state, the oldest pending report's age, windows and
    releases by state, the time of its last release, and its dead letters."""
    out: dict[str, dict[str, Any]] = {}

    def row(name: str) -> dict[str, Any]:
        return out.setdefault(name, {"feed": name, "pending": 0, "released": 0, "suppressed": 0, "blocked": 0,
                                     "oldest_pending_age_s": None, "windows": {}, "releases": {},
                                     "last_release_at": None, "dlq": 0})

    only = (lambda stmt: stmt.where(Window.feed == feed)) if feed is not None else (lambda stmt: stmt)
    pool = (select(Window.feed, PendingReport.state, func.count(), func.min(PendingReport.received_at))
            .join(Window, PendingReport.window_id == Window.id).group_by(Window.feed, PendingReport.state))
    for name, state, n, oldest in s.execute(only(pool)).all():
        r = row(name)
        r[state] = int(n)
        oldest = _aware(oldest)
        if state == "pending" and oldest is not None:
            r["oldest_pending_age_s"] = round((now - oldest).total_seconds(), 1)
    for name, state, n in s.execute(only(select(Window.feed, Window.state, func.count())
                                         .group_by(Window.feed, Window.state))).all():
        row(name)["windows"][state] = int(n)
    rel = (select(Window.feed, Release.state, func.count(), func.max(Release.created_at))
           .join(Window, Release.window_id == Window.id).group_by(Window.feed, Release.state))
    for name, state, n, last in s.execute(only(rel)).all():
        r = row(name)
        r["releases"][state] = int(n)
        last = _aware(last)
        if last is not None and (r["last_release_at"] is None or last.isoformat() > r["last_release_at"]):
            r["last_release_at"] = last.isoformat()
    dlq = select(Counter.feed, func.sum(Counter.count)).where(Counter.kind == "dlq").group_by(Counter.feed)
    for name, n in s.execute(dlq if feed is None else dlq.where(Counter.feed == feed)).all():
        row(name)["dlq"] = int(n or 0)
    if feed is not None:
        row(feed)
    return [out[k] for k in sorted(out)]
