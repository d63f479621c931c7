"""The linking guard: which of a window's candidates may be released (docs/privacy.md, "Linking").

A report whose fingerprint was released before is never released again (``report``); with
``content`` also a report whose content fingerprint was released (a re-keyed copy), and only one copy
per window; with ``person`` also a report about a person already released. Blocked reports stay in the
pool as ``blocked`` and are counted in the manifest by rule.
"""

from __future__ import annotations

from db import Candidate, ReleaseRepository


def eligible(repo: ReleaseRepository, guard: str, cands: list[Candidate]
             ) -> tuple[list[Candidate], list[int], dict[tuple[str, str], int]]:
    """Apply the linking guard: (eligible candidates, blocked pool ids, blocked per (station, rule)).

    ``report``: the report fingerprint was released; ``content``: also the content fingerprint was
    released, or an earlier candidate of this window has it (one copy is kept); ``person``: also the
    person was released. See docs/privacy.md for what each rule stops.
    """
    if guard == "off" or not cands:
        return cands, [], {}
    seen = repo.released_reports([c.fingerprint for c in cands])
    contents: set[str] = set()
    persons: set[str] = set()
    if guard in ("content", "person"):
        contents = repo.released_contents(sorted({c.content_fp for c in cands if c.content_fp}))
    if guard == "person":
        persons = repo.released_persons(sorted({c.person_fp for c in cands if c.person_fp}))
    ok, blocked = [], []
    by: dict[tuple[str, str], int] = {}
    for c in cands:
        rule = None
        if c.fingerprint in seen:
            rule = "report"
        elif guard != "report" and c.content_fp is not None and c.content_fp in contents:
            rule = "content"
        elif c.person_fp is not None and c.person_fp in persons:
            rule = "person"
        if rule is None:
            ok.append(c)
            if guard != "report" and c.content_fp is not None:
                contents.add(c.content_fp)  # a second copy in this window is blocked too
        else:
            blocked.append(c.pool_id)
            by[(c.station_id, rule)] = by.get((c.station_id, rule), 0) + 1
    return ok, blocked, by

