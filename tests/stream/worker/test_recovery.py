"""Crash recovery and sharing: a worker killed between the ledger write and the publish; two workers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import func, select

from db.models import PendingReport, Release, ReleasedFingerprint, Window
from stream.ops.broker import EmbeddedBroker
from stream.testing.reports import day_of_reports
from stream.testing.scenario import Scenario
from stream.testing.services import PostgresServer

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.slow]


def _published_view(sc: Scenario) -> tuple[Counter[str], Counter[tuple[str, int]], list]:
    manifests = sc.read_topic(sc.settings.topic_releases)
    records = sc.read_topic(sc.settings.topic_anonymized)
    return (Counter(m["release_id"] for m in manifests), Counter((r["release_id"], r["seq"]) for r in records),
            manifests)


def test_worker_killed_between_ledger_write_and_publish(kafka: EmbeddedBroker, pg: PostgresServer,
                                                        tmp_path: Path) -> None:
    # every tail out: a window that closed early on a loaded machine (ingest paused past idle_timeout_s)
    # leaves its remainder in a second window, released rather than carried below min_release_rows
    sc = Scenario(kafka, pg, tmp_path, claim_lease_s=3.0, windows={"min_release_rows": 1})
    try:
        reports = day_of_reports(2, 200, seed=5)
        sc.push(reports)
        crashing = sc.start_worker(fault_point="after-ledger-write")
        sc.wait_for(lambda: crashing.poll() is not None, timeout=90)
        assert crashing.returncode == -9, sc.logs()[-2000:]
        with sc.db.read() as s:
            before = {r.id: (r.state, r.checksum, r.window_id) for r in s.execute(select(Release)).scalars()}
        assert before and all(state == "stored" for state, _, _ in before.values())
        assert sc.read_topic(sc.settings.topic_releases, idle_s=1.0) == []  # nothing was published

        sc.start_worker()
        acc = sc.wait_settled(timeout=120)
        with sc.db.read() as s:
            after = {r.id: (r.state, r.checksum, r.window_id) for r in s.execute(select(Release)).scalars()}
            n_fp = s.execute(select(func.count()).select_from(ReleasedFingerprint)).scalar_one()
            n_pool = s.execute(select(func.count()).select_from(PendingReport)).scalar_one()
            windows = s.execute(select(Window.id, Window.state)).all()
        # the release stored before the crash is published as it was stored, exactly once
        for rid, (_state, check, wid) in before.items():
            assert after[rid] == ("published", check, wid)
        assert len({wid for _, _, wid in after.values()}) == len(after)  # one release per window
        manifests, records, _ = _published_view(sc)
        assert set(manifests) == set(after) and all(n == 1 for n in manifests.values())
        assert all(n == 1 for n in records.values())
        # every distinct report is accounted for exactly once (redelivered messages count as duplicates)
        distinct = sum(len(v) for v in reports.values())
        assert n_pool == distinct
        assert acc["released"] + acc.get("suppressed", 0) == distinct
        assert n_fp == acc["released"]
        assert all(state in ("released", "carried", "empty") for _, state in windows)
    finally:
        sc.close()


def test_two_workers_share_partitions_without_duplicate_releases(kafka: EmbeddedBroker, pg: PostgresServer,
                                                                 tmp_path: Path) -> None:
    sc = Scenario(kafka, pg, tmp_path, reports_partitions=4, windows={"min_release_rows": 1})  # every tail out
    try:
        sc.start_worker()
        sc.start_worker()
        reports = day_of_reports(4, 150, seed=9)
        sc.wait_for(lambda: _assignment(sc) is not None, timeout=90)
        sc.push(reports)
        acc = sc.wait_settled(timeout=120)
        with sc.db.read() as s:
            rels = s.execute(select(Release)).scalars().all()
            n_fp = s.execute(select(func.count()).select_from(ReleasedFingerprint)).scalar_one()
            actors = set(s.execute(select(Release.publish_claimed_by)).scalars())
        distinct = sum(len(v) for v in reports.values())
        assert acc["released"] + acc.get("suppressed", 0) == distinct
        assert n_fp == acc["released"] == sum(r.released for r in rels)
        assert len({r.window_id for r in rels}) == len(rels)
        manifests, records, published = _published_view(sc)
        assert set(manifests) == {r.id for r in rels}
        assert all(n == 1 for n in manifests.values()), manifests
        assert all(n == 1 for n in records.values())
        assert sum(m["records"] for m in published) == acc["released"]
        assert len(actors) >= 1
        shares = _assignment(sc)
        assert shares is not None and all(shares), "both workers consume a share of the input partitions"
    finally:
        sc.close()


def _assignment(sc: Scenario) -> list[list[int]] | None:
    """Both workers' input partitions once they split all of them between them (from their heartbeats)."""
    from db.status import workers

    parts = [w["partitions"] for w in workers(sc.db)]
    live = [p for p in parts if p]
    if len(live) == 2 and sorted(p for ps in live for p in ps) == list(range(sc.settings.reports_partitions)):
        return live
    return None
