"""What the content guard reads from the ledger: released reports per content, and per export (the
window reports arrived in, which a later window adopting them does not change)."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

import pytest

from db import Database, PoolRepository, ReleaseConflict, ReleaseRepository, WindowPolicy
from db.ledger import IncomingReport
from tests.db.test_ledger import NOW, T0, _stored, report, windows


def _with_content(i: int, content: str, t: datetime = T0) -> IncomingReport:
    return dataclasses.replace(report(i, t=t), content_fp=content.ljust(64, "0"))


def test_counts_per_content_and_per_arrival_window(ledger_db: Database) -> None:
    pool, repo = PoolRepository(ledger_db, WindowPolicy()), ReleaseRepository(ledger_db)
    c, d = "c".ljust(64, "0"), "d".ljust(64, "0")
    pool.ingest([_with_content(i, "c") for i in range(3)] + [_with_content(3, "d")], [], NOW)
    (w0,) = windows(ledger_db)
    repo.claim_window(w0.id, "a", NOW, 60, "due")
    cands = repo.candidates(w0)
    assert {x.arrived_in for x in cands} == {w0.id}
    first = cands[:2] + cands[3:]  # two of the three c's and the d; the third c is held back
    rel = dataclasses.replace(_stored(w0.id, [x.pool_id for x in first], [x.fingerprint for x in first]),
                              content_fps=[x.content_fp for x in first], held_back_ids=[cands[2].pool_id],
                              content_seen={c: 0, d: 0})
    assert repo.store(rel, "a", NOW)
    assert repo.released_content_counts([c, d, "e".ljust(64, "0")]) == {c: 2, d: 1}
    assert repo.released_in_cohorts([w0.id], [c, d]) == {(w0.id, "S1", c): 2, (w0.id, "S1", d): 1}

    # a later window adopts the held-back c: it keeps its export, so it is the third occurrence there
    pool.ingest([_with_content(10, "c", t=T0 + timedelta(days=1))], [], NOW + timedelta(hours=1))
    w1 = windows(ledger_db)[-1]
    repo.claim_window(w1.id, "a", NOW + timedelta(hours=1), 60, "due")
    later = {x.fingerprint: x.arrived_in for x in repo.candidates(w1)}
    assert later == {cands[2].fingerprint: w0.id, report(10).fingerprint: w1.id}

    # a store whose guard read fewer released c's than the ledger now holds is refused
    stale = dataclasses.replace(_stored(w1.id, [cands[2].pool_id], [cands[2].fingerprint], rid="r-2"),
                                content_fps=[c], content_seen={c: 1})
    with pytest.raises(ReleaseConflict, match="content was released meanwhile"):
        repo.store(stale, "a", NOW + timedelta(hours=1))
    assert repo.store(dataclasses.replace(stale, content_seen={c: 2}), "a", NOW + timedelta(hours=1))
