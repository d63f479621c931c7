"""The corrections policy (docs/privacy.md, "Corrections"): what a new version of a known report does.

A *correction* is a report whose station and report id (so its keyed fingerprint) and event time match
a report the ledger already holds, with other content. Then:

* **the report is still pending** (its window, or the carried window holding it, is not being closed):
  the correction *replaces* it in the pool, in the same window; the corrected content is what gets
  released. Counted as ``correction`` / ``replaced`` for its station.
* **the report was released** (or suppressed or blocked by a release, or its window is being closed
  right now): the correction is counted as ``correction`` / ``released`` and never released, because
  publishing a second version would let the two be linked (the difference points at one report).

Both kinds are also tallied on the key's open window, so its manifest's ``counts.duplicates`` counts
them. The decision is race-free against a worker closing the window: the report's window row is locked
(``FOR UPDATE``) while the correction is written, so a claim either waits for the correction (and
releases the corrected content) or has already moved the window to ``closing`` (and the correction is
counted as ``released``); a carried report adopted by a claim meanwhile is no longer in the window the
update names, so it is not replaced either.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from db.models import PendingReport, Window
from db.reports import IncomingReport
from db.session import rowcount
from db.window_state import utc

REPLACED = "replaced"
RELEASED = "released"
_CHUNK = 500


@dataclass
class Versions:
    """A batch's reports sorted against the pool (and against earlier reports of the same batch)."""

    fresh: list[tuple[int, IncomingReport]] = field(default_factory=list)  # (index, newest version) to insert
    repeats: list[tuple[IncomingReport, str]] = field(default_factory=list)  # (report, duplicate | correction)
    corrected: dict[str, IncomingReport] = field(default_factory=dict)  # fp -> last correction of a stored one
    reused: list[int] = field(default_factory=list)  # indices: same id, another event time (dead-lettered)


def version_kind(known: tuple[str, datetime] | None, content_hash: str, event_time: datetime) -> str:
    """What a report is against the version the ledger knows (content hash, event time): ``new``,
    ``duplicate`` (same content), ``correction`` (same event, other content) or ``reused`` (same id,
    another event: dead-lettered as ``report-id-reused``)."""
    if known is None:
        return "new"
    if known[0] == content_hash:
        return "duplicate"
    return "correction" if known[1] == event_time else "reused"


def sort_versions(s: Session, candidates: list[tuple[int, IncomingReport]]) -> Versions:
    """Sort ``(index, report)`` pairs: new reports, duplicates, corrections and reused ids. A correction
    of a report first seen in the same batch replaces it before it is inserted."""
    fps = sorted({r.fingerprint for _i, r in candidates})
    known: dict[str, tuple[str, datetime]] = {}
    for j in range(0, len(fps), _CHUNK):
        rows = s.execute(select(PendingReport.fingerprint, PendingReport.content_hash, PendingReport.event_time)
                         .where(PendingReport.fingerprint.in_(fps[j:j + _CHUNK]))).all()
        known.update({fp: (h, t) for fp, h, t in rows})
    out = Versions()
    fresh_at: dict[str, int] = {}  # fingerprint -> its place in ``out.fresh``
    latest: dict[str, tuple[str, datetime]] = {}  # this batch's last accepted version of each report
    for i, r in candidates:
        kind = version_kind(latest.get(r.fingerprint) or known.get(r.fingerprint), r.content_hash, r.event_time)
        if kind == "new":
            fresh_at[r.fingerprint] = len(out.fresh)
            out.fresh.append((i, r))
        elif kind == "duplicate":
            out.repeats.append((r, "duplicate"))
            continue
        elif kind == "correction":  # the newest version is the one kept
            out.repeats.append((r, "correction"))
            if r.fingerprint in fresh_at:
                out.fresh[fresh_at[r.fingerprint]] = (out.fresh[fresh_at[r.fingerprint]][0], r)
            else:
                out.corrected[r.fingerprint] = r
        else:
            out.reused.append(i)
            continue
        latest[r.fingerprint] = (r.content_hash, r.event_time)
    return out


def apply_corrections(s: Session, latest: dict[str, IncomingReport]) -> dict[str, str]:
    """Replace the pending reports corrected by ``latest`` (fingerprint -> its last correction in the
    batch) where the policy allows; returns fingerprint -> :data:`REPLACED` or :data:`RELEASED`."""
    fps = sorted(latest)
    where: dict[str, str] = {}
    for j in range(0, len(fps), _CHUNK):
        where.update(s.execute(select(PendingReport.fingerprint, PendingReport.window_id).where(
            PendingReport.fingerprint.in_(fps[j:j + _CHUNK]), PendingReport.state == "pending")).tuples().all())
    window_ids = sorted(set(where.values()))
    open_windows: set[str] = set()
    for j in range(0, len(window_ids), _CHUNK):  # locked in id order, as the ingest's count updates are
        rows = s.execute(select(Window.id, Window.state).where(Window.id.in_(window_ids[j:j + _CHUNK]))
                         .order_by(Window.id).with_for_update()).tuples().all()
        open_windows |= {wid for wid, state in rows if state != "closing"}
    out: dict[str, str] = {}
    for fp in fps:
        window_id = where.get(fp)
        replaced = 0
        if window_id in open_windows:
            r = latest[fp]
            replaced = rowcount(s.execute(update(PendingReport).where(
                PendingReport.fingerprint == fp, PendingReport.state == "pending",
                PendingReport.window_id == window_id).values(
                data=r.data, content_hash=r.content_hash, content_fp=r.content_fp, person_fp=r.person_fp)
                .execution_options(synchronize_session=False))) or 0
        out[fp] = REPLACED if replaced else RELEASED
    return out


def preview(s: Session, reports: list[tuple[str, str, datetime]]) -> Counter[str]:
    """What the ledger would make of ``(fingerprint, content hash, event time)`` reports if they were
    ingested now (read only): ``new``, ``duplicate``, ``replaced`` / ``released`` (corrections, see the
    policy above) or ``reused`` (same id, another event time: dead-lettered)."""
    fps = sorted({fp for fp, _h, _t in reports})
    known: dict[str, tuple[str, datetime, str, str]] = {}
    for j in range(0, len(fps), _CHUNK):
        rows = s.execute(select(PendingReport.fingerprint, PendingReport.content_hash, PendingReport.event_time,
                                PendingReport.state, Window.state)
                         .join(Window, PendingReport.window_id == Window.id)
                         .where(PendingReport.fingerprint.in_(fps[j:j + _CHUNK]))).tuples().all()
        known.update({fp: (h, utc(t), st, wst) for fp, h, t, st, wst in rows})
    out: Counter[str] = Counter()
    for fp, content_hash, event_time in reports:
        seen = known.get(fp)
        kind = version_kind(seen[:2] if seen else None, content_hash, event_time)
        if kind == "correction" and seen is not None:
            kind = REPLACED if seen[2] == "pending" and seen[3] != "closing" else RELEASED
        out[kind] += 1
    return out
