"""Read-only queries of the operator console (``stream.console``) over the ledger models.

Nothing here writes. Every function takes an open :class:`~sqlalchemy.orm.Session` (use
``Database.unit()``) and returns plain dicts / lists of JSON-able values. Aggregates only: no
function returns a fingerprint or the quasi-identifier values of a single pending report, except
:func:`release_sample`, which the console uses internally (never served) to recompute a PBG-EA
front that the ledger did not store.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, String, and_, cast, func, select
from sqlalchemy.orm import Session

from db.models import (
    AuditEntry,
    Counter,
    DlqEvent,
    PendingReport,
    Release,
    ReleaseRecords,
    StationControl,
    Window,
)
from db.states import WindowState

WINDOW_STATES = tuple(WindowState)


@dataclass(frozen=True)
class ReleaseFilter:
    """Filters of the releases list. ``since``/``until`` bound the release (ledger write) time."""

    station: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    engine: str | None = None
    feed: str | None = None
    limit: int = 100
    offset: int = 0


def _iso(t: datetime | None) -> str | None:
    return t.isoformat() if t is not None else None


def _aware(v: Any) -> datetime | None:
    """A UTC datetime from an aggregate's result (SQLite may hand back text or a naive value)."""
    if v is None:
        return None
    t = v if isinstance(v, datetime) else datetime.fromisoformat(str(v))
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _release_summary(r: Release, w: Window | None) -> dict[str, Any]:
    return {
        "id": r.id, "created_at": _iso(r.created_at), "published_at": _iso(r.published_at), "state": r.state,
        "window": {"id": r.window_id, "key": r.window_key, "start": _iso(w.start) if w else None,
                   "end": _iso(w.end) if w else None, "seq": w.seq if w else None},
        "feed": w.feed if w else None,
        "stations": list(r.stations or []), "engine": r.engine, "k": r.k_achieved, "l": r.l_achieved,
        "information_loss": r.information_loss, "received": r.received, "released": r.released,
        "suppressed": r.suppressed, "held_back": r.held_back, "blocked": r.blocked,
    }


def list_releases(s: Session, f: ReleaseFilter = ReleaseFilter()) -> tuple[list[dict[str, Any]], int]:
    """Release summaries, newest first, and the total matching the filter (before limit/offset)."""
    conds: list[ColumnElement[bool]] = []
    if f.station:
        # JSON list column: a portable text match, confirmed exactly in Python below.
        conds.append(cast(Release.stations, String).like(f'%"{_like_escape(f.station)}"%', escape="\\"))
    if f.since is not None:
        conds.append(Release.created_at >= f.since)
    if f.until is not None:
        conds.append(Release.created_at < f.until)
    if f.engine:
        conds.append(Release.engine == f.engine)
    if f.feed:
        conds.append(Window.feed == f.feed)
    where = and_(*conds) if conds else None
    q = select(Release, Window).join(Window, Window.id == Release.window_id, isouter=True)
    if where is not None:
        q = q.where(where)
    q = q.order_by(Release.created_at.desc(), Release.id)
    rows = [(r, w) for r, w in s.execute(q).all() if not f.station or f.station in (r.stations or [])]
    total = len(rows)
    rows = rows[f.offset:f.offset + f.limit]
    return [_release_summary(r, w) for r, w in rows], total


def release_manifests(s: Session, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The manifests of the given releases, by release id."""
    if not ids:
        return {}
    return {rid: m for rid, m in s.execute(select(Release.id, Release.manifest).where(Release.id.in_(ids))).all()}


def release_detail(s: Session, release_id: str) -> dict[str, Any] | None:
    """Everything the ledger holds about one release except its records (see :func:`release_records`)."""
    r = s.get(Release, release_id)
    if r is None:
        return None
    w = s.get(Window, r.window_id)
    out = _release_summary(r, w)
    out.update({
        "params": r.params, "seed": r.seed, "metrics": r.metrics, "verification": r.verification,
        "checksum": r.checksum, "manifest": r.manifest, "publish_count": r.publish_count,
        "window_close_reason": w.close_reason if w else None,
        "audit": audit_entries(s, subject=release_id, limit=50),
    })
    return out


def release_records(s: Session, release_id: str) -> tuple[list[str], list[list[Any]]] | None:
    """Columns and rows of a release exactly as stored (generalized; already published data)."""
    recs = s.get(ReleaseRecords, release_id)
    if recs is None:
        return None
    return list(recs.columns), [list(row) for row in recs.rows]


def release_sample(s: Session, release_id: str) -> list[tuple[int, dict[str, Any]]]:
    """INTERNAL: pool id and stored values of the reports a release sampled (released or suppressed),
    in pool-id order, i.e. the engine's input. Never serve this; it holds single records' QIs."""
    rows = s.execute(select(PendingReport.id, PendingReport.data).where(
        PendingReport.release_id == release_id, PendingReport.state.in_(("released", "suppressed")))
        .order_by(PendingReport.id)).all()
    return [(int(i), dict(d)) for i, d in rows]


def known_stations(s: Session) -> list[str]:
    names = set(s.execute(select(PendingReport.station_id).distinct()).scalars())
    names.update(s.execute(select(StationControl.station_id)).scalars())
    names.update(st for st in s.execute(select(Counter.station_id).distinct()).scalars())
    return sorted(n for n in names if n)


def pool_by_station(s: Session, now: datetime) -> list[dict[str, Any]]:
    """Per station: reports by pool state and the age of the oldest still-pending report."""
    out: dict[str, dict[str, Any]] = {}
    for station, state, n in s.execute(select(PendingReport.station_id, PendingReport.state, func.count())
                                       .group_by(PendingReport.station_id, PendingReport.state)).all():
        row = out.setdefault(station, {"station": station, "pending": 0, "released": 0, "suppressed": 0,
                                       "blocked": 0, "oldest_pending_received_at": None,
                                       "oldest_pending_age_s": None})
        row[state] = int(n)
    for station, oldest in s.execute(select(PendingReport.station_id, func.min(PendingReport.received_at))
                                     .where(PendingReport.state == "pending")
                                     .group_by(PendingReport.station_id)).all():
        oldest = _aware(oldest)
        if oldest is not None and station in out:
            out[station]["oldest_pending_received_at"] = _iso(oldest)
            out[station]["oldest_pending_age_s"] = round((now - oldest).total_seconds(), 1)
    return [out[k] for k in sorted(out)]


def counters(s: Session) -> list[dict[str, Any]]:
    """DLQ / duplicate / correction counters per station and reason."""
    rows = s.execute(select(Counter).order_by(Counter.kind, Counter.station_id, Counter.reason, Counter.feed)).scalars()
    return [{"feed": c.feed, "station": c.station_id, "kind": c.kind, "reason": c.reason, "count": int(c.count),
             "last_at": _iso(c.last_at)} for c in rows]


RESUBMISSIONS = {("duplicate", "duplicate"): "duplicates", ("correction", "replaced"): "corrections_replaced",
                 ("correction", "released"): "corrections_released",
                 ("correction", "correction"): "corrections_released"}  # before the policy split them


def resubmissions(counts: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per station, from :func:`counters`: duplicates, corrections that replaced a pending report and
    corrections of released reports (counted, never released again; db.corrections)."""
    out: dict[str, dict[str, int]] = {}
    for c in counts:
        name = RESUBMISSIONS.get((c["kind"], c["reason"]))
        if name is not None:
            row = out.setdefault(c["station"], dict.fromkeys(sorted(set(RESUBMISSIONS.values())), 0))
            row[name] += c["count"]
    return out


def recent_dlq(s: Session, limit: int = 20) -> list[dict[str, Any]]:
    """Latest dead-letter events: time, station, reason code and the raw one-line message (the caller
    must scrub the message before showing it; payloads are never stored here)."""
    rows = s.execute(select(DlqEvent).order_by(DlqEvent.at.desc(), DlqEvent.id.desc()).limit(limit)).scalars()
    return [{"at": _iso(e.at), "feed": e.feed, "station": e.station_id, "reason": e.reason, "message": e.message}
            for e in rows]


def window_counts(s: Session) -> dict[str, int]:
    return {state: int(n) for state, n in s.execute(select(Window.state, func.count()).group_by(Window.state))}


def windows(s: Session, states: tuple[str, ...] = ("held", "carried"), limit: int = 100) -> list[dict[str, Any]]:
    """Windows in the given states, newest first, with how many of their reports are still pending."""
    pending = (select(PendingReport.window_id, func.count().label("n")).where(PendingReport.state == "pending")
               .group_by(PendingReport.window_id).subquery())
    q = (select(Window, pending.c.n).join(pending, pending.c.window_id == Window.id, isouter=True)
         .where(Window.state.in_(states)).order_by(Window.closed_at.desc(), Window.id).limit(limit))
    return [{"id": w.id, "key": w.key, "start": _iso(w.start), "end": _iso(w.end), "seq": w.seq, "state": w.state,
             "close_reason": w.close_reason, "reason": w.hold_reason, "count": w.count,
             "still_pending": int(n or 0), "closed_at": _iso(w.closed_at)} for w, n in s.execute(q).all()]


def window_state(s: Session, window_id: str) -> str | None:
    w = s.get(Window, window_id)
    return w.state if w is not None else None


def station_controls(s: Session) -> dict[str, dict[str, Any]]:
    return {c.station_id: {"paused": bool(c.paused), "updated_at": _iso(c.updated_at), "updated_by": c.updated_by}
            for c in s.execute(select(StationControl)).scalars()}


def audit_entries(s: Session, subject: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    q = select(AuditEntry).order_by(AuditEntry.at.desc(), AuditEntry.id.desc()).limit(limit)
    if subject is not None:
        q = q.where(AuditEntry.subject == subject)
    return [{"at": _iso(a.at), "actor": a.actor, "action": a.action, "subject": a.subject, "detail": a.detail}
            for a in s.execute(q).scalars()]


def activity(s: Session) -> dict[str, Any]:
    """Ledger-side signs of life: last ingest, last release, releases waiting to be published."""
    def one(stmt: Any) -> Any:
        return s.execute(stmt).scalar_one_or_none()

    last_in = one(select(PendingReport.received_at).order_by(PendingReport.received_at.desc()).limit(1))
    last_rel = one(select(Release.created_at).order_by(Release.created_at.desc()).limit(1))
    last_pub = one(select(Release.published_at).where(Release.published_at.is_not(None))
                   .order_by(Release.published_at.desc()).limit(1))
    oldest_unpub = one(select(Release.created_at).where(Release.state == "stored")
                       .order_by(Release.created_at).limit(1))
    by_state = {st: int(n) for st, n in s.execute(select(Release.state, func.count()).group_by(Release.state))}
    claimers = sorted({c for c in s.execute(select(Window.claimed_by).where(Window.claimed_by.is_not(None))
                                            .distinct()).scalars() if c})
    return {"last_ingest_at": _iso(last_in), "last_release_at": _iso(last_rel), "last_publish_at": _iso(last_pub),
            "oldest_unpublished_at": _iso(oldest_unpub), "releases_by_state": by_state,
            "workers_seen": claimers}


def registered_stations(s: Session) -> list[dict[str, Any]]:
    """The station registry (ids are validated station ids, not report identifiers)."""
    from db.models import Station

    rows = s.execute(select(Station).order_by(Station.station_id, Station.feed)).scalars()
    return [{"feed": r.feed, "station": r.station_id, "source": r.source, "added_at": _iso(r.added_at), "note": r.note}
            for r in rows]
