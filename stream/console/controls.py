"""Operator controls: the only writes the console makes. Each is one transaction that changes a flag
the ledger models provide and appends an ``audit_log`` entry (who, what, when; no record values).

* :func:`set_paused` sets ``station_controls.paused`` for a station (pause / resume its releases);
  the worker's orchestrator is expected to skip closing windows of a paused station.
* :func:`release_held_window` acts on a window in state ``held`` after review. It never publishes
  anything itself and never bypasses the independent verifier:

  - ``mode="retry"`` (default) re-opens the window (state ``open``, claim and hold reason cleared);
    it is idle, so the worker closes it again on its next tick, with the current settings (use it
    after fixing a configuration problem, or after a transient failure);
  - ``mode="carry"`` marks it ``carried``: its pending reports join the next window of its key
    (a different sample, and so a different release, useful when a deterministic engine keeps
    failing on exactly this batch).
* :func:`register_stations` / :func:`unregister_stations` manage the station registry (the same
  :class:`db.stations.StationRegistry` as ``anonstream stations add|remove``; in production mode only
  registered stations' reports are accepted). Ids are checked like the CLI's; removing a station keeps
  its pending reports (they are released with their windows) and refuses its new reports.
* :func:`record_reverification` audits the outcome of a re-verification.
* :func:`flush_waiting` asks the workers to release the reports of a key waiting below
  ``min_release_rows`` now (at least k; ``anonstream windows flush``, the console's station flush).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import update

from db.models import AuditEntry, StationControl, Window
from db.session import Database, insert_ignore, rowcount
from db.window_state import request_flush
from db.windows import WindowPolicy
from stream.console.redact import scrub

ReleaseMode = Literal["retry", "carry"]


class ControlError(Exception):
    """A control that cannot be applied (unknown subject or wrong state); ``status`` is the HTTP code."""

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


def set_paused(db: Database, station: str, paused: bool, actor: str, note: str | None = None) -> dict[str, Any]:
    from core.canonical import station_id

    station = station_id(station)  # `08` pauses station 8, the id its reports are kept under
    if not station or len(station) > 120:
        raise ControlError("station id must be 1-120 characters", 400)
    now = datetime.now(UTC)
    with db.unit() as s:
        res = s.execute(update(StationControl).where(StationControl.station_id == station)
                        .values(paused=paused, updated_at=now, updated_by=actor))
        if rowcount(res) == 0:
            insert_ignore(s, StationControl.__table__, [{"station_id": station, "paused": paused, "updated_at": now,
                                                         "updated_by": actor}], ["station_id"])
            s.execute(update(StationControl).where(StationControl.station_id == station)
                      .values(paused=paused, updated_at=now, updated_by=actor))
        s.add(AuditEntry(at=now, actor=actor, action="station-paused" if paused else "station-resumed",
                         subject=station, detail={"note": note} if note else {}))
    return {"station": station, "paused": paused, "updated_at": now.isoformat(), "updated_by": actor}


def release_held_window(db: Database, window_id: str, actor: str, mode: ReleaseMode = "retry",
                        note: str | None = None, scrub_words: Iterable[str] = ()) -> dict[str, Any]:
    if mode not in ("retry", "carry"):
        raise ControlError("mode must be 'retry' or 'carry'", 400)
    now = datetime.now(UTC)
    with db.unit() as s:
        w = s.get(Window, window_id)
        if w is None:
            raise ControlError("no such window", 404)
        if w.state != "held":
            raise ControlError(f"window is {w.state}, only a held window can be released", 409)
        previous = w.hold_reason
        values: dict[str, Any] = ({"state": "open", "hold_reason": None, "claimed_by": None, "claimed_at": None,
                                   "close_reason": None, "closed_at": None} if mode == "retry"
                                  else {"state": "carried", "hold_reason": f"released by {actor} after review",
                                        "closed_at": now})
        res = s.execute(update(Window).where(Window.id == window_id, Window.state == "held").values(**values))
        if rowcount(res) != 1:
            raise ControlError("window changed state meanwhile; reload and retry", 409)
        detail: dict[str, Any] = {"mode": mode, "previous_reason": scrub(previous, scrub_words)}
        if note:
            detail["note"] = note[:300]
        s.add(AuditEntry(at=now, actor=actor, action="window-released", subject=window_id, detail=detail))
    return {"window": window_id, "mode": mode, "state": values["state"], "at": now.isoformat()}


def record_reverification(db: Database, result: dict[str, Any], actor: str) -> None:
    detail = {k: result.get(k) for k in ("ok", "records_expected", "records_found", "duplicates", "checksum_ok",
                                         "k", "l_distinct")}
    detail["failures"] = list(result.get("failures") or [])[:5]
    with db.unit() as s:
        s.add(AuditEntry(at=datetime.now(UTC), actor=actor, action="release-reverified",
                         subject=result.get("release_id"), detail=detail))


def station_ids(text: str) -> list[str]:
    """Station ids from a form field (separated by spaces, commas or new lines), each checked, in their
    canonical form (``08`` is station ``8``) and each once."""
    from stream.intake.guards import station_ids as checked_ids

    ids = [t for t in text.replace(",", " ").split() if t]
    if not ids:
        raise ControlError("give at least one station id", 400)
    if len(ids) > 500:
        raise ControlError("at most 500 station ids at a time", 400)
    canonical, bad = checked_ids(ids)
    if bad:
        raise ControlError(f"invalid station id {bad[0][:70]!r}: use 1-64 characters of A-Z a-z 0-9 . _ - "
                           "starting with a letter or digit", 400)
    return canonical


def register_stations(db: Database, text: str, actor: str, note: str | None = None) -> dict[str, Any]:
    """Register the stations named in ``text``; reports which were new and which were known already."""
    from db.stations import StationRegistry

    ids = station_ids(text)
    new = StationRegistry(db).add(ids, actor, datetime.now(UTC), (note or "")[:200] or None)
    return {"added": new, "already_registered": [i for i in ids if i not in new]}


def unregister_stations(db: Database, text: str, actor: str) -> dict[str, Any]:
    """Remove the stations named in ``text`` from the registry (unknown ids are reported, not an error)."""
    from db.stations import StationRegistry

    ids = station_ids(text)
    removed = StationRegistry(db).remove(ids, actor, datetime.now(UTC))
    return {"removed": removed, "not_registered": [i for i in ids if i not in removed]}


def flush_waiting(db: Database, policy: WindowPolicy, keys: list[str] | None, actor: str) -> list[dict[str, Any]]:
    """Flag the keys' open windows ``flush`` (a key with only carried reports gets a new window), audited;
    the workers release them at their next tick (:func:`db.window_state.request_flush`)."""
    now = datetime.now(UTC)
    done = request_flush(db, policy, keys, now)
    with db.unit() as s:
        s.add(AuditEntry(at=now, actor=actor, action="windows-flushed", subject=policy.feed,
                         detail={"keys": [d["key"] for d in done if d["windows"]]}))
    return done
