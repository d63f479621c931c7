"""Fair scheduling of due windows: the ones too small to release are carried in bulk, the rest are
served round-robin across keys, windows that can release first.

A window whose key has fewer reports waiting than its release floor (``min_release_rows``, k for a
window the operator flushed) can only be carried. One station inventing thousands of station ids
opens thousands of such windows; claimed one by one through the release path (a slot, a claim, the
candidates, the carry) they kept a genuine station's window waiting behind them in due order. Now:

* the due windows that are alone of their key and too small are claimed together, their candidates
  screened by the linking guard as one window's would be (the guard's ledger reads done once for all
  of them), and closed together with the state and hold reason the one-by-one path gives
  (:mod:`db.small_windows`); their tallies of duplicates move on as they would;
* the other due windows are ordered so that windows that can release (their key's reports reach the
  floor) come before the ones that will only be carried, and within each class round-robin across
  keys (each key's windows in start order), so no key's backlog delays another key's release.

Releases do not change: the same windows release the same reports; only the order of work does.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime

from db import Candidate, Database, ReleaseRepository
from db.small_windows import WindowSize, claim_small, finish_small, window_sizes
from db.states import WindowState
from db.window_state import carry_duplicates
from stream.config.settings import Settings
from stream.ops.logs import ctx
from stream.worker.link_guard import eligible

log = logging.getLogger(__name__)


def carry_reason(n: int, k: int, floor: int) -> str:
    """The hold reason of a window carried with ``n`` reports to release below its ``floor``."""
    rule = f"k={k}" if n < k else f"min_release_rows={floor}"
    return f"too small: {n} report(s) to release < {rule}"


class PrefetchedLedger(ReleaseRepository):
    """The linking guard's reads of the ledger for many windows' candidates, done once for all of them.

    Each method answers for any subset of the candidates exactly as :class:`ReleaseRepository` would."""

    def __init__(self, db: Database, cands: list[Candidate], guard: str) -> None:
        super().__init__(db)
        repo = ReleaseRepository(db)
        fps = sorted({c.content_fp for c in cands if c.content_fp})
        self._reports = repo.released_reports(sorted({c.fingerprint for c in cands}))
        self._content = repo.released_content_counts(fps) if guard in ("content", "person") else {}
        self._cohorts = (repo.released_in_cohorts(sorted({c.arrived_in or c.window_id for c in cands}), fps)
                         if guard in ("content", "person") else {})
        self._persons = (repo.released_persons(sorted({c.person_fp for c in cands if c.person_fp}))
                         if guard == "person" else set())

    def released_reports(self, fingerprints: list[str]) -> set[str]:
        return self._reports.intersection(fingerprints)

    def released_content_counts(self, content_fps: list[str]) -> dict[str, int]:
        return {c: self._content[c] for c in content_fps if c in self._content}

    def released_in_cohorts(self, arrived_in: list[str], content_fps: list[str]) -> dict[tuple[str, str, str], int]:
        arrived, fps = set(arrived_in), set(content_fps)
        return {k: n for k, n in self._cohorts.items() if k[0] in arrived and k[2] in fps}

    def released_persons(self, person_fps: list[str]) -> set[str]:
        return self._persons.intersection(person_fps)


def schedule_due(db: Database, settings: Settings, worker: str, ids: list[str], now: datetime) -> list[str]:
    """Carry the too-small due windows in bulk (:func:`carry_small`) and return the others in fair order."""
    if not ids:
        return []
    k, floor = settings.privacy.k, settings.windows.release_floor(settings.privacy.k)
    sizes = window_sizes(db, ids)
    per_key: dict[str, list[WindowSize]] = defaultdict(list)
    for w in sizes.values():
        per_key[w.key].append(w)
    small = [ws[0].id for ws in per_key.values() if len(ws) == 1 and not ws[0].flush and ws[0].waiting < floor]
    carried = carry_small(db, settings, worker, small, k, floor, now) if small else set()
    rest = {wid: w for wid, w in sizes.items() if wid not in carried}
    gone = [wid for wid in ids if wid not in sizes]  # no longer open: left to the claim to find out
    return fair_order(rest, k, floor) + gone


def fair_order(sizes: dict[str, WindowSize], k: int, floor: int) -> list[str]:
    """Windows whose key can release (its waiting reports reach the floor, k for a flushed window) first,
    then the others; within each, one window per key in turn (keys by their waiting reports, most first,
    then their oldest window's start and name; a key's windows by start and sequence)."""
    per_key: dict[str, list[WindowSize]] = defaultdict(list)
    for w in sizes.values():
        per_key[w.key].append(w)
    classes: tuple[list[list[WindowSize]], list[list[WindowSize]]] = ([], [])
    waiting: dict[str, int] = {}
    for key, ws in per_key.items():
        ws.sort(key=lambda w: (w.start, w.seq, w.id))
        waiting[key] = sum(w.own for w in ws) + ws[0].carried
        ready = waiting[key] >= (k if any(w.flush for w in ws) else floor)
        classes[0 if ready else 1].append(ws)
    out: list[str] = []
    for group in classes:
        # the largest first: workers claiming from the top spread the big releases over themselves first,
        # and the small ones fill in after (longest processing time first: the shortest run for N workers)
        group.sort(key=lambda ws: (-waiting[ws[0].key], ws[0].start, ws[0].key))
        for r in range(max((len(ws) for ws in group), default=0)):
            out += [ws[r].id for ws in group if r < len(ws)]
    return out


def carry_small(db: Database, settings: Settings, worker: str, ids: list[str], k: int, floor: int,
                now: datetime) -> set[str]:
    """Claim and close the windows of ``ids`` still too small once claimed, as one by one: ``empty`` with no
    candidate, ``carried`` (no reason) when the linking guard blocks them all, else ``carried`` too small
    with the count of eligible reports. Returns the ids closed."""
    claimed = claim_small(db, ids, floor, worker, now, settings.claim_lease_s)
    if not claimed:
        return set()
    guard = settings.privacy.link_guard
    ledger = PrefetchedLedger(db, [c for w in claimed for c in w.candidates], guard)
    outcomes: dict[str, tuple[str, str | None]] = {}
    for w in claimed:
        ok, _blocked, _by = eligible(ledger, guard, w.candidates)
        if not ok:
            outcomes[w.id] = (WindowState.EMPTY if not w.candidates else WindowState.CARRIED, None)
        else:
            outcomes[w.id] = (WindowState.CARRIED, carry_reason(len(ok), k, floor))
    closed = finish_small(db, outcomes, worker, now)
    for w in claimed:
        if w.duplicates or w.dropped:
            carry_duplicates(db, w.id, w.key)
        log.debug("window %s %s: %s", w.id, *outcomes[w.id], extra=ctx(window=w.id))
    log.info("%d due window(s) too small to release closed in bulk (carried or empty)", closed)
    return set(outcomes)
