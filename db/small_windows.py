"""Due windows by size, and closing in bulk the ones too small to release.

A window whose key has fewer reports waiting (its own pending reports plus those carried in the key's
closed windows) than the release floor can only be carried. Claiming and releasing such windows one
by one costs a claim, a release slot and a few ledger round trips each, so a flood of one-report
windows (thousands of invented station ids) kept a genuine station's window waiting behind them. Here
they are sized in one query (:func:`window_sizes`), claimed together in one transaction with their
key's carried reports adopted as a single claim would (:func:`claim_small`), and closed together
(:func:`finish_small`), the caller (:mod:`stream.worker.scheduling`) deciding each window's state and
hold reason exactly as the one-by-one path does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update

from db.claims import CARRIED_STATES, adopt_carried
from db.models import PendingReport, Window
from db.releases import Candidate
from db.session import Database, rowcount, utc
from db.states import WindowState

CHUNK = 500  # ids per IN list (SQLite's bound on parameters, and short statements)


@dataclass(frozen=True)
class WindowSize:
    """A due window and the reports its release would draw from."""

    id: str
    key: str
    start: datetime
    seq: int
    flush: bool
    own: int  # pending reports in the window
    carried: int  # pending reports of the key waiting in its closed windows

    @property
    def waiting(self) -> int:
        return self.own + self.carried


@dataclass(frozen=True)
class SmallWindow:
    """A window claimed by :func:`claim_small`, with its candidates (carried ones adopted)."""

    id: str
    key: str
    duplicates: int
    dropped: int
    candidates: list[Candidate]


def _chunks(ids: Sequence[str]) -> Iterator[list[str]]:
    for i in range(0, len(ids), CHUNK):
        yield list(ids[i:i + CHUNK])


def _pending_counts(s: Any, ids: list[str], keys: set[str]) -> tuple[dict[str, int], dict[str, int]]:
    """Pending reports per window of ``ids``, and per key of ``keys`` in the key's closed windows."""
    own: dict[str, int] = defaultdict(int)
    carried: dict[str, int] = defaultdict(int)
    p = PendingReport
    for part in _chunks(ids):
        for wid, n in s.execute(select(p.window_id, func.count()).where(p.window_id.in_(part), p.state == "pending")
                                .group_by(p.window_id)).tuples():
            own[wid] += int(n)
    for part in _chunks(sorted(keys)):
        closed = select(Window.id).where(Window.key.in_(part), Window.state.in_(CARRIED_STATES))
        for key, n in s.execute(select(p.window_key, func.count()).where(
                p.window_key.in_(part), p.state == "pending", p.window_id.in_(closed)).group_by(p.window_key)).tuples():
            carried[key] += int(n)
    return own, carried


def window_sizes(db: Database, ids: Sequence[str]) -> dict[str, WindowSize]:
    """The open windows among ``ids`` with the reports waiting for each (a few queries for any number)."""
    with db.read() as s:
        rows = [r for part in _chunks(sorted(set(ids))) for r in s.execute(
            select(Window.id, Window.key, Window.start, Window.seq, Window.flush)
            .where(Window.id.in_(part), Window.state == WindowState.OPEN)).all()]
        own, carried = _pending_counts(s, [r.id for r in rows], {r.key for r in rows})
    return {r.id: WindowSize(r.id, r.key, utc(r.start), int(r.seq), bool(r.flush), own.get(r.id, 0),
                             carried.get(r.key, 0)) for r in rows}


def claim_small(db: Database, ids: Sequence[str], floor: int, worker: str, now: datetime,
                lease_s: float, reason: str = "due") -> list[SmallWindow]:
    """Claim, in one transaction, those of ``ids`` (open, unflushed windows, at most one per key) whose key
    has fewer than ``floor`` reports waiting once claimed; adopt their key's carried reports and return
    them with their candidates. A window that grew to the floor meanwhile is left open, untouched."""
    p = PendingReport
    with db.unit() as s:
        claimed: list[tuple[str, str, Any, Any, Any, Any]] = []
        for part in _chunks(sorted(set(ids))):
            before = {r.id: r for r in s.execute(select(
                Window.id, Window.claimed_by, Window.claimed_at, Window.lease_until, Window.close_reason)
                .where(Window.id.in_(part), Window.state == WindowState.OPEN)).all()}
            got = s.execute(update(Window).where(
                Window.id.in_(part), Window.state == WindowState.OPEN, Window.flush.is_not(True))
                .values(state=WindowState.CLOSING, claimed_by=worker, claimed_at=now,
                        lease_until=now + timedelta(seconds=lease_s), close_reason=reason)
                .returning(Window.id, Window.key)).tuples().all()
            claimed += [(wid, key, *before[wid][1:]) for wid, key in got if wid in before]
        by_key: dict[str, list[str]] = defaultdict(list)
        for wid, key, *_ in claimed:
            by_key[key].append(wid)
        own, carried = _pending_counts(s, [c[0] for c in claimed], set(by_key))
        keep: list[tuple[str, str, Any, Any, Any, Any]] = []
        back: list[tuple[str, str, Any, Any, Any, Any]] = []
        for wid, key, *prev in claimed:  # counted after the claim: no report can join them any more
            (keep if len(by_key[key]) == 1 and own.get(wid, 0) + carried.get(key, 0) < floor else back).append(
                (wid, key, *prev))
        for wid, _key, by, at, until, why in back:  # as they were: the one-by-one path releases them
            s.execute(update(Window).where(Window.id == wid).values(
                state=WindowState.OPEN, claimed_by=by, claimed_at=at, lease_until=until, close_reason=why))
        for wid, key, *_ in keep:  # as claim_window does
            if carried.get(key):
                adopt_carried(s, wid, key)
        mine = [k[0] for k in keep]
        cands: dict[str, list[Candidate]] = defaultdict(list)
        tallies: dict[str, tuple[int, int]] = {}
        for part in _chunks(mine):
            for r in s.execute(select(*Candidate.columns()).where(p.window_id.in_(part), p.state == "pending")
                               .order_by(p.id)).all():
                cands[r[4]].append(Candidate.of(r))
            for wid, dups, dropped in s.execute(select(Window.id, Window.duplicates, Window.dropped)
                                                .where(Window.id.in_(part))).tuples():
                tallies[wid] = (int(dups or 0), int(dropped or 0))
    return [SmallWindow(wid, key, *tallies[wid], cands[wid]) for wid, key, *_ in keep]


def finish_small(db: Database, outcomes: dict[str, tuple[str, str | None]], worker: str, now: datetime) -> int:
    """Close claimed windows without a release, ``outcomes`` giving each its state (``carried`` or
    ``empty``) and hold reason: one statement per distinct outcome, only for windows still claimed by
    ``worker``. Returns how many were closed."""
    groups: dict[tuple[str, str | None], list[str]] = defaultdict(list)
    for wid, outcome in outcomes.items():
        groups[outcome].append(wid)
    done = 0
    with db.unit() as s:
        for (state, reason), wids in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1] or "")):
            for part in _chunks(sorted(wids)):
                done += int(rowcount(s.execute(update(Window).where(
                    Window.id.in_(part), Window.state == WindowState.CLOSING, Window.claimed_by == worker)
                    .values(state=state, hold_reason=reason, closed_at=now))) or 0)
    return done
