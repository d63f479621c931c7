"""The linking guard: which of a window's candidates may be released (docs/privacy.md, "Linking").

A report whose fingerprint was released before is never released again (``report``). With ``content``
(the default) content is counted in **occurrences**: reports of one station with the same content
fingerprint that arrived in one window are one export's 1st, 2nd ... occurrence of it (co-offenders:
same day, place, age group, sex, offence, different report ids), and the *n*-th is blocked only when
the ledger already released at least *n* reports with that content. So co-offenders are all released,
while the same reports sent again (a re-send, a second extract, another station id, new report ids,
another layout of the values) are blocked. With ``person`` also a report about a person already
released. Blocked reports stay in the pool (``blocked``, or pending until a release counts them) and
are counted in the manifest by rule (:data:`stream.wire.manifest.BLOCK_REASONS`).

:func:`occurrences_blocked` is the counting rule itself; batch runs (``anonymize --ledger``,
:mod:`stream.batch.history`) apply the same function to a file, one export per station.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

from db import Candidate, ReleaseRepository


class Occurrence(NamedTuple):
    """One report as the occurrence rule sees it."""

    cohort: str  # the export it came with: station and arrival window (stream), station (batch file)
    content_fp: str | None
    fingerprint: str
    released: bool = False  # its report fingerprint is in the ledger: one of the released occurrences


def occurrences_blocked(items: Sequence[Occurrence], released: dict[str, int],
                        siblings: dict[tuple[str, str], int] | None = None) -> set[int]:
    """Positions in ``items`` the content rule blocks: occurrences the ledger already released.

    Reports with the same ``cohort`` and content are one export's copies of that content; cohorts are
    taken in the order of their first report in ``items``. In a cohort, ``siblings`` (reports of the
    cohort an earlier release already released, e.g. co-offenders of a report held back by the sample)
    and reports already ``released`` take the first occurrence numbers, the others follow in
    fingerprint order (deterministic, independent of arrival). The *n*-th is blocked when ``released``
    (the ledger's count per content) is at least *n*. A later cohort of the same content (another
    station's copy in the same window) then counts the earlier one as released.
    """
    cohorts: dict[tuple[str, str], list[int]] = {}
    for i, item in enumerate(items):
        if item.content_fp is not None:
            cohorts.setdefault((item.cohort, item.content_fp), []).append(i)
    counts = dict(released)
    blocked: set[int] = set()
    for (cohort, cfp), members in cohorts.items():
        done = (siblings or {}).get((cohort, cfp), 0) + sum(items[i].released for i in members)
        rest = sorted((i for i in members if not items[i].released), key=lambda i: items[i].fingerprint)
        seen = counts.get(cfp, 0)
        blocked.update(i for n, i in enumerate(rest, start=done + 1) if n <= seen)
        counts[cfp] = max(seen, done + len(rest))
    return blocked


def eligible(repo: ReleaseRepository, guard: str, cands: list[Candidate]
             ) -> tuple[list[Candidate], list[int], dict[tuple[str, str], int]]:
    """Apply the linking guard: (eligible candidates, blocked pool ids, blocked per (station, rule)).

    ``report``: the report fingerprint was released; ``content``: also occurrences of a content beyond
    those the ledger released (:func:`occurrences_blocked`, one cohort per station and arrival window,
    so reports carried or held back from an earlier window keep their export); ``person``: also the
    person was released. Eligible candidates carry ``content_seen``, the ledger's count of their
    content as read here, which the release's store checks (:func:`seen_counts`). docs/privacy.md says
    what each rule stops.
    """
    if guard == "off" or not cands:
        return cands, [], {}
    seen = repo.released_reports([c.fingerprint for c in cands])
    counts: dict[str, int] = {}
    by_content: set[int] = set()
    persons: set[str] = set()
    if guard in ("content", "person"):
        fps = sorted({c.content_fp for c in cands if c.content_fp})
        counts = repo.released_content_counts(fps)
        siblings: dict[tuple[str, str], int] = {}
        for (arrived, station, cfp), n in repo.released_in_cohorts(sorted({_arrival(c) for c in cands}), fps).items():
            siblings[(_cohort(station, arrived), cfp)] = n
        by_content = occurrences_blocked([Occurrence(_cohort(c.station_id, _arrival(c)), c.content_fp, c.fingerprint,
                                                     c.fingerprint in seen) for c in cands], counts, siblings)
    if guard == "person":
        persons = repo.released_persons(sorted({c.person_fp for c in cands if c.person_fp}))
    ok, blocked = [], []
    by: dict[tuple[str, str], int] = {}
    for i, c in enumerate(cands):
        rule = None
        if c.fingerprint in seen:
            rule = "report"
        elif i in by_content:
            rule = "content"
        elif c.person_fp is not None and c.person_fp in persons:
            rule = "person"
        if rule is None:
            content = c.content_fp if guard in ("content", "person") else None
            ok.append(dataclasses.replace(c, content_seen=counts.get(content, 0)) if content is not None else c)
        else:
            blocked.append(c.pool_id)
            by[(c.station_id, rule)] = by.get((c.station_id, rule), 0) + 1
    return ok, blocked, by


def _arrival(c: Candidate) -> str:
    return c.arrived_in or c.window_id


def _cohort(station: str, arrived_in: str) -> str:
    return f"{station}\x1f{arrived_in}"


def seen_counts(sample: Sequence[Candidate]) -> dict[str, int] | None:
    """``StoredRelease.content_seen`` of a sample of eligible candidates: the ledger's count of each of
    their contents as the guard read it (None when the guard did not read contents)."""
    if all(c.content_seen is None for c in sample):
        return None
    return {c.content_fp: c.content_seen for c in sample if c.content_fp and c.content_seen is not None}
