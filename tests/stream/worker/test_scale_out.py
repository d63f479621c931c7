"""Issue 43: three workers in one consumer group stay exact while one is SIGKILLed mid-release and a fourth
joins mid-run (a consumer-group rebalance with work in flight).

Worker A runs alone until it kills itself inside its first anonymization (``ANONSTREAM_FAULT_POINT=anonymize``),
so the kill is certain, not a race. B and C then take over; once they have published a release, D joins and
a second day is pushed, so D's join rebalances partitions that still carry unread reports. Afterwards every
report is in the ledger once and released, suppressed or pending once; fingerprints = manifests = what the
topic carries; no window has two releases; every manifest verifies; and a check that knows nothing of the
service (a pandas group-by over each release's published labels) finds every class of at least k rows with at
least the manifest's distinct l offences. One worker alone, given the same pushes, publishes the same
releases (their content: records and manifests, apart from ids and what hashes them).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import func, select

from db.models import PendingReport, Release, ReleasedFingerprint
from stream.ops.broker import EmbeddedBroker
from stream.testing.reports import DAY, day_of_reports
from stream.testing.scenario import Scenario, release_contents
from stream.testing.services import PostgresServer
from stream.wire.signing import verify_manifest

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.slow]


def _published(sc: Scenario) -> int:
    with sc.db.read() as s:
        return int(s.execute(select(func.count()).select_from(Release).where(Release.state == "published"))
                   .scalar_one())


def test_three_workers_exact_under_a_kill_and_an_add(kafka: EmbeddedBroker, pg: PostgresServer, tmp_path: Path) -> None:
    sc = Scenario(kafka, pg, tmp_path, claim_lease_s=4.0, reports_partitions=8)
    try:
        first = day_of_reports(6, 150, seed=43)
        second = day_of_reports(6, 150, seed=44, day=DAY + timedelta(days=1))
        sc.push(first, batch="day-1")

        a = sc.start_worker(fault_point="anonymize")
        sc.wait_for(lambda: a.poll() is not None, timeout=180)
        assert a.returncode == -9, f"worker A exited {a.returncode}\n{sc.logs()[-3000:]}"  # killed mid-release
        sc.start_worker()
        sc.start_worker()
        sc.wait_for(lambda: _published(sc) >= 1, timeout=240)
        sc.start_worker()  # D joins while B and C are at work: the group rebalances
        sc.push(second, batch="day-2")  # ... and there is still work to spread over the new assignment
        acc = sc.wait_settled(timeout=300)

        distinct = sum(len(v) for v in first.values()) + sum(len(v) for v in second.values())
        with sc.db.read() as s:
            rels = s.execute(select(Release)).scalars().all()
            n_fp = s.execute(select(func.count()).select_from(ReleasedFingerprint)).scalar_one()
            n_pool = s.execute(select(func.count()).select_from(PendingReport)).scalar_one()
        assert n_pool == distinct  # each report in the ledger once
        assert acc["released"] + acc.get("suppressed", 0) + acc.get("pending", 0) + acc.get("blocked", 0) == distinct
        assert n_fp == acc["released"] == sum(r.released for r in rels)
        assert all(r.state == "published" for r in rels) and len({r.window_id for r in rels}) == len(rels)

        manifests = sc.read_topic(sc.settings.topic_releases)
        by_window: dict[str, set[str]] = defaultdict(set)
        for m in manifests:
            by_window[m["window"]["id"]].add(m["release_id"])
        assert all(len(ids) == 1 for ids in by_window.values()), by_window
        assert Counter(m["release_id"] for m in manifests) == Counter({r.id: 1 for r in rels})
        key = sc.public_key()
        assert [verify_manifest(m, key) for m in manifests] == [None] * len(manifests)

        asm, complete = sc.releases()
        assert {m["release_id"] for m, _ in complete} == {r.id for r in rels} and not asm.refused
        assert sum(len(recs) for _, recs in complete) == acc["released"]
        days = {m["window"]["start"][:10] for m, _ in complete}
        assert days == {DAY.date().isoformat(), (DAY + timedelta(days=1)).date().isoformat()}
        for manifest, records in complete:  # the outside k / l check
            frame = pd.DataFrame([r["values"] for r in records], columns=manifest["columns"])
            frame = frame[~frame["suppressed"].astype(bool)]
            classes = frame.groupby(list(manifest["codebook"]["qis"]), dropna=False)["offence"]
            assert classes.size().min() >= manifest["k"] >= sc.settings.privacy.k, manifest["release_id"]
            assert classes.nunique(dropna=False).min() >= manifest["l"], manifest["release_id"]
    finally:
        sc.close()

    # the same pushes to one worker alone: the same releases, byte for byte (content, not ids)
    alone = Scenario(kafka, pg, tmp_path / "alone", claim_lease_s=4.0, reports_partitions=8)
    try:
        alone.push(first, batch="day-1")
        alone.push(second, batch="day-2")
        alone.start_worker()
        alone.wait_settled(timeout=300)
        mine, theirs = release_contents(alone.releases()[1]), release_contents(complete)
        assert len(mine) == len(theirs) == len(rels)
        assert mine == theirs, [m["window"]["id"] for m, t in zip(mine, theirs, strict=True) if m != t]
    finally:
        alone.close()
