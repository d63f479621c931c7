"""Release side of the ledger: claiming windows, candidates, the release transaction, publishing state.

Guarantees (enforced by the database, not only by the caller):

* a window is closed by one worker at a time: its claim is a lease renewed by the holder, and the
  ledger writes of a window are fenced by that claim (:mod:`db.claims`);
* the release row, its records, its released fingerprints and the pool/window state changes are
  written in ONE transaction; the fingerprint is the primary key of ``released_fingerprints``, so a
  report can never be released twice, and pool rows move ``pending -> released`` only if still
  pending (otherwise the whole transaction is rolled back and the window is retried);
* with the content guard, a release is stored only if no content it holds was released meanwhile (the
  ledger's count per content fingerprint is what the guard read: ``StoredRelease.content_seen``);
* release ids are deterministic, so storing the same release twice is a no-op;
* publishing is claimed too, and a stored but unpublished release is re-published from
  ``release_records`` exactly as stored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session

from db.bulk import bulk_insert, update_where_ids, value_counts, values_present
from db.claims import CARRIED_STATES, ClaimRepository, LostClaim, adopt_carried, fence

__all__ = ["Candidate", "LostClaim", "ReleaseConflict", "ReleaseRepository", "StoredRelease"]
from db.models import AuditEntry, PendingReport, Release, ReleasedFingerprint, ReleaseRecords, Watermark, Window
from db.release_budget import BudgetCharge, BudgetConflict, apply_budget
from db.session import Database
from db.states import WindowState


class ReleaseConflict(Exception):
    """Some candidate reports were taken by another release meanwhile; recompute the window."""


@dataclass(frozen=True)
class Candidate:
    pool_id: int
    fingerprint: str
    person_fp: str | None
    station_id: str
    window_id: str
    data: dict[str, Any]
    content_fp: str | None = None
    counted_in: str | None = None  # the release whose manifest counted it as held back, if any
    arrived_in: str | None = None  # the window it was ingested into (its export, for the content guard)
    content_seen: int | None = None  # set by the linking guard: the ledger's count of its content when read
    event_time: datetime | None = None  # for the budget blocks of differentially private counts

    @staticmethod
    def columns() -> tuple[Any, ...]:
        """The pending pool's columns a candidate is read from, in :meth:`of`'s order."""
        p = PendingReport
        return (p.id, p.fingerprint, p.person_fp, p.station_id, p.window_id, p.data, p.content_fp, p.counted_in,
                p.arrived_in, p.event_time)

    @classmethod
    def of(cls, r: Any) -> Candidate:
        """The candidate of a row selected with :meth:`columns`."""
        return cls(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], event_time=r[9])


@dataclass
class StoredRelease:
    """Everything the release transaction writes."""

    id: str
    window_id: str
    window_key: str
    stations: list[str]
    engine: str
    params: dict[str, Any]
    seed: int
    k_achieved: int
    l_achieved: int | None
    information_loss: float | None
    metrics: dict[str, Any]
    verification: dict[str, Any]
    counts: dict[str, int]
    checksum: str
    manifest: dict[str, Any]
    columns: list[str]
    rows: list[list[Any]]
    released_ids: list[int] = field(default_factory=list)
    suppressed_ids: list[int] = field(default_factory=list)
    blocked_ids: list[int] = field(default_factory=list)
    held_back_ids: list[int] = field(default_factory=list)  # eligible, not sampled: stay pending, counted
    key_duplicates: int = 0  # taken from the key's tally of duplicates that arrived with no open window
    key_dropped: int = 0  # likewise for reports dropped for a missing value
    fingerprints: list[tuple[str, str | None]] = field(default_factory=list)
    content_fps: list[str | None] = field(default_factory=list)  # aligned with ``fingerprints`` (or empty)
    blocked_by: dict[tuple[str, str], int] = field(default_factory=dict)  # (station, guard rule) -> reports
    content_seen: dict[str, int] | None = None
    """Per content fingerprint of the release, how many reports with it the ledger held when the linking
    guard read it; the store refuses the release if any of them grew meanwhile (None: no check)."""
    budget: BudgetCharge | None = None  # the privacy budget its count tables spend (db.release_budget)


def count_blocked(s: Session, blocked_by: dict[tuple[str, str], int], now: datetime,
                  feed: str = "default") -> None:
    """Add reports the linking guard blocked to the ``link-guard`` counters (per feed, station and rule)."""
    from db.ledger import _bump

    for (station, rule), n in sorted(blocked_by.items()):
        _bump(s, station, "link-guard", rule, n, now, feed)


class ReleaseRepository(ClaimRepository):
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- windows (claims and leases: db/claims.py) ---------------------------------------------------
    def window(self, window_id: str) -> Window | None:
        with self.db.read() as s:
            return s.get(Window, window_id)

    def candidates(self, window: Window) -> list[Candidate]:
        """Pending reports of this window, including those carried over from earlier closed windows of its
        key: the claim adopted them (:meth:`ClaimRepository.claim_window`), so no other window draws them."""
        p = PendingReport
        with self.db.unit() as s:  # reports carried by a window of the key that closed since the claim, too
            adopt_carried(s, window.id, window.key)
            rows = s.execute(select(*Candidate.columns()).where(p.window_id == window.id, p.state == "pending")
                             .order_by(p.id)).all()
        return [Candidate.of(r) for r in rows]

    def key_tallies(self, key: str) -> tuple[int, int]:
        """Duplicates and reports dropped for missing values of ``key`` that arrived while it had no open
        window, not yet in any manifest."""
        with self.db.read() as s:
            row = s.execute(select(Watermark.pending_duplicates, Watermark.pending_dropped)
                            .where(Watermark.key == key)).first()
        return (int(row[0] or 0), int(row[1] or 0)) if row is not None else (0, 0)

    def released_persons(self, person_fps: list[str]) -> set[str]:
        with self.db.read() as s:
            return values_present(s, ReleasedFingerprint.person_fp, person_fps)

    def released_content_counts(self, content_fps: list[str]) -> dict[str, int]:
        """How many released reports hold each content fingerprint (those released by none left out)."""
        with self.db.read() as s:
            return value_counts(s, ReleasedFingerprint.content_fp, content_fps)

    def released_in_cohorts(self, arrived_in: list[str], content_fps: list[str]) -> dict[tuple[str, str, str], int]:
        """Reports of the pool already released, per (window they arrived in, station, content fingerprint),
        for the given windows and fingerprints: the released occurrences of each export's contents."""
        if not arrived_in or not content_fps:
            return {}
        p = PendingReport
        out: dict[tuple[str, str, str], int] = {}
        with self.db.read() as s:
            for i in range(0, len(content_fps), 500):
                rows = s.execute(select(p.arrived_in, p.station_id, p.content_fp, func.count())
                                 .where(p.arrived_in.in_(sorted(set(arrived_in))), p.state == "released",
                                        p.content_fp.in_(content_fps[i:i + 500]))
                                 .group_by(p.arrived_in, p.station_id, p.content_fp)).all()
                out.update({(str(a), str(st), str(c)): int(n) for a, st, c, n in rows})
        return out

    def released_reports(self, fingerprints: list[str]) -> set[str]:
        with self.db.read() as s:
            return values_present(s, ReleasedFingerprint.fingerprint, fingerprints)

    def finish_window(self, window_id: str, state: str, reason: str | None, now: datetime,
                      blocked_ids: Sequence[int] = (), worker: str | None = None) -> None:
        """Close a window without a release: ``carried`` (too small), ``held`` (review) or ``empty``.

        With ``worker``, only while that worker still holds the window's claim (:class:`LostClaim`)."""
        with self.db.unit() as s:
            if worker is not None:
                fence(s, window_id, worker)
            pending = PendingReport.__table__
            update_where_ids(s, pending, list(blocked_ids), pending.c.state == "pending", {"state": "blocked"})
            s.execute(update(Window).where(Window.id == window_id)
                      .values(state=state, hold_reason=reason, closed_at=now))
            if state == WindowState.HELD:
                s.add(AuditEntry(at=now, actor="worker", action="window-held", subject=window_id,
                                 detail={"reason": reason}))

    # --- the release transaction ------------------------------------------------------------------
    def store(self, rel: StoredRelease, worker: str, now: datetime, lease_s: float = 10.0,
              fenced: bool = True, within: Callable[[Session], None] | None = None) -> bool:
        """Write the release atomically. Returns False if it was already stored (idempotent).

        ``fenced``: only while ``worker`` holds the window's claim (else :class:`LostClaim`, nothing
        written). The publishing claim starts now (the store's own clock, not ``now``, which is when
        the window was claimed), with a lease of ``lease_s``. ``within`` runs first inside the transaction
        (the delay mode creates the release's window and saves its stream state there: db/castle_states.py).
        """
        stamp = datetime.now(UTC)
        with self.db.unit() as s:
            if s.execute(select(Release.id).where(Release.id == rel.id)).first() is not None:
                return False
            if within is not None:
                within(s)
            if fenced:
                fence(s, rel.window_id, worker)
            try:  # the spend commits with the release, or neither does
                if rel.budget is not None:
                    apply_budget(s, rel.budget, rel.id, now, s.execute(select(Window.feed).where(
                        Window.id == rel.window_id)).scalar_one())
            except BudgetConflict as exc:
                raise ReleaseConflict(str(exc)) from exc
            c = rel.counts
            s.execute(insert(Release).values(
                id=rel.id, window_id=rel.window_id, window_key=rel.window_key, stations=rel.stations,
                engine=rel.engine, params=rel.params, seed=rel.seed, k_achieved=rel.k_achieved,
                l_achieved=rel.l_achieved, information_loss=rel.information_loss, metrics=rel.metrics,
                verification=rel.verification, received=c["received"], released=c["released"],
                suppressed=c["suppressed"], held_back=c["held_back"], blocked=c.get("blocked", 0),
                checksum=rel.checksum, manifest=rel.manifest, state="stored", publish_claimed_by=worker,
                publish_claimed_at=stamp, publish_lease_until=stamp + timedelta(seconds=lease_s), created_at=now,
                publish_count=0))
            s.execute(insert(ReleaseRecords).values(release_id=rel.id, columns=rel.columns, rows=rel.rows))
            contents = rel.content_fps or [None] * len(rel.fingerprints)
            if rel.content_seen is not None:  # a re-release of released content is refused (docs/privacy.md)
                mine = sorted({c for c in contents if c})
                now_counts = value_counts(s, ReleasedFingerprint.content_fp, mine)
                grew = {c for c in mine if now_counts.get(c, 0) > rel.content_seen.get(c, 0)}
                if grew:
                    raise ReleaseConflict(f"{sum(c in grew for c in contents)} report(s) whose content was "
                                          "released meanwhile (a re-release is refused)")
            bulk_insert(s, ReleasedFingerprint.__table__, [
                {"fingerprint": fp, "release_id": rel.id, "person_fp": pfp, "content_fp": cfp, "released_at": now}
                for (fp, pfp), cfp in zip(rel.fingerprints, contents, strict=True)])
            pending = PendingReport.__table__
            for ids, state in ((rel.released_ids, "released"), (rel.suppressed_ids, "suppressed"),
                               (rel.blocked_ids, "blocked")):
                changed = update_where_ids(s, pending, list(ids), pending.c.state == "pending",
                                           {"state": state, "release_id": rel.id})
                if changed != len(ids):
                    raise ReleaseConflict(f"{len(ids) - changed} report(s) left the pool meanwhile")
            update_where_ids(s, pending, list(rel.held_back_ids), pending.c.state == "pending",
                             {"counted_in": rel.id})
            if rel.key_duplicates or rel.key_dropped:
                s.execute(update(Watermark).where(Watermark.key == rel.window_key)
                          .values(pending_duplicates=Watermark.pending_duplicates - rel.key_duplicates,
                                  pending_dropped=Watermark.pending_dropped - rel.key_dropped))
            if rel.blocked_by:
                count_blocked(s, rel.blocked_by, now,
                              s.execute(select(Window.feed).where(Window.id == rel.window_id)).scalar_one())
            s.execute(update(Window).where(Window.id == rel.window_id)
                      .values(state=WindowState.RELEASED, release_id=rel.id, closed_at=now))
            s.add(AuditEntry(at=now, actor=worker, action="release-stored", subject=rel.id,
                             detail={"window": rel.window_id, "counts": c}))
        return True

    # --- publishing (claims: db/claims.py) -------------------------------------------------------
    def load(self, release_id: str) -> tuple[dict[str, Any], list[str], list[list[Any]]]:
        """The stored manifest, columns and rows of a release."""
        with self.db.read() as s:
            rel = s.get(Release, release_id)
            recs = s.get(ReleaseRecords, release_id)
            if rel is None or recs is None:
                raise KeyError(release_id)
            return rel.manifest, list(recs.columns), [list(r) for r in recs.rows]

    def mark_published(self, release_id: str, worker: str, now: datetime) -> dict[str, float]:
        """Mark a release published; returns its stage timings (kept in the ledger, not the manifest)."""
        with self.db.unit() as s:
            s.execute(update(Release).where(Release.id == release_id).values(
                state="published", published_at=now, publish_count=Release.publish_count + 1))
            s.add(AuditEntry(at=now, actor=worker, action="release-published", subject=release_id, detail={}))
            verification = s.execute(select(Release.verification).where(Release.id == release_id)).scalar_one_or_none()
        timings = (verification or {}).get("timings") if isinstance(verification, dict) else None
        return timings if isinstance(timings, dict) else {}

    def accounting(self) -> dict[str, int]:
        """Report counts by fate: pool states, duplicates/corrections and DLQ rejections; ``carried``: of the
        pending ones, those waiting in closed windows for the next window of their key (too few to release, or
        not sampled).

        All counts come from one snapshot: on PostgreSQL the read runs at REPEATABLE READ, so a release
        committed while they are counted is either wholly in them or not at all (at READ COMMITTED each
        statement would see its own snapshot). A SQLite read transaction is one snapshot already."""
        from db.models import Counter

        with self.db.read() as s:
            if s.get_bind().dialect.name == "postgresql":
                s.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            out = {state: int(n) for state, n in s.execute(
                select(PendingReport.state, func.count()).group_by(PendingReport.state)).all()}
            for kind, n in s.execute(select(Counter.kind, func.sum(Counter.count)).group_by(Counter.kind)).all():
                out[kind] = int(n or 0)
            out["releases_stored"] = int(s.execute(select(func.count()).select_from(Release)
                                                   .where(Release.state == "stored")).scalar_one())
            out["releases_published"] = int(s.execute(select(func.count()).select_from(Release)
                                                      .where(Release.state == "published")).scalar_one())
            out["windows_open"] = int(s.execute(select(func.count()).select_from(Window)
                                                .where(Window.state.in_(("open", "closing")))).scalar_one())
            out["carried"] = int(s.execute(select(func.count()).select_from(PendingReport).join(
                Window, PendingReport.window_id == Window.id).where(
                PendingReport.state == "pending", Window.state.in_(CARRIED_STATES))).scalar_one())
        return out
