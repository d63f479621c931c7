"""Chaos: workers SIGKILLed at claim, anonymize, after the ledger write and mid-publish, on a loaded core.

Each faulty worker runs alone until it kills itself at its fault point (``ANONSTREAM_FAULT_POINT``,
:mod:`stream.ops.faults`); then two healthy workers finish the work. Meanwhile another process keeps one
core busy (:func:`stream.testing.load.busy_core`). Afterwards every report is released exactly once or
accounted for, no window has two release ids, every manifest on the topic verifies with the service's
public key, and no manifest was published twice.
"""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from sqlalchemy import func, select

from db.models import PendingReport, Release, ReleasedFingerprint, Window
from stream.ops.broker import EmbeddedBroker
from stream.testing.load import busy_core
from stream.testing.reports import day_of_reports
from stream.testing.scenario import Scenario
from stream.testing.services import PostgresServer
from stream.wire.signing import verify_manifest

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.slow]
FAULTS = ("claim", "anonymize", "after-ledger-write", "mid-publish")


def test_workers_killed_at_every_step_lose_and_duplicate_nothing(kafka: EmbeddedBroker, pg: PostgresServer,
                                                                 tmp_path: Path) -> None:
    with busy_core():  # keeps one core busy throughout
        sc = Scenario(kafka, pg, tmp_path, claim_lease_s=4.0, window_max_reports=40, reports_partitions=4)
        try:
            reports = day_of_reports(4, 120, seed=21)  # 4 stations x 3 full windows each
            sc.push(reports)
            for fault in FAULTS:
                worker = sc.start_worker(fault_point=fault)
                sc.wait_for(lambda w=worker: w.poll() is not None, timeout=180)
                assert worker.returncode == -9, f"{fault}: exited {worker.returncode}\n{sc.logs()[-3000:]}"
                assert f"fault point {fault}" in sc.logs()
            sc.start_worker()
            sc.start_worker()
            acc = sc.wait_settled(timeout=240)

            with sc.db.read() as s:
                rels = s.execute(select(Release)).scalars().all()
                n_fp = s.execute(select(func.count()).select_from(ReleasedFingerprint)).scalar_one()
                n_pool = s.execute(select(func.count()).select_from(PendingReport)).scalar_one()
                states = Counter(s.execute(select(Window.state)).scalars())
            distinct = sum(len(v) for v in reports.values())
            # every report exactly once: in the pool once, released or suppressed once, fingerprinted once
            assert n_pool == distinct
            accounted = acc["released"] + acc.get("suppressed", 0) + acc.get("pending", 0) + acc.get("blocked", 0)
            assert accounted == distinct
            assert n_fp == acc["released"] == sum(r.released for r in rels)
            assert set(states) <= {"released", "carried", "empty"}, states
            assert all(r.state == "published" for r in rels)

            manifests = sc.read_topic(sc.settings.topic_releases)
            by_window: dict[str, set[str]] = defaultdict(set)
            for m in manifests:
                by_window[m["window"]["id"]].add(m["release_id"])
            assert all(len(ids) == 1 for ids in by_window.values()), by_window  # no window with two release ids
            assert Counter(m["release_id"] for m in manifests) == Counter({r.id: 1 for r in rels})  # each once
            key = sc.public_key()
            assert [verify_manifest(m, key) for m in manifests] == [None] * len(manifests)
            asm, complete = sc.releases()
            assert {m["release_id"] for m, _ in complete} == {r.id for r in rels} and not asm.refused
            assert sum(len(recs) for _, recs in complete) == acc["released"]
        finally:
            sc.close()
            _reap_orphans(str(tmp_path))


def _reap_orphans(data_dir: str) -> None:
    """Release processes of a worker killed while they were still starting up do not notice their
    worker died (issue 14 item 7, supervision, is fixed elsewhere); never leave them running."""
    import os
    import signal
    from pathlib import Path

    for proc in Path("/proc").glob("[0-9]*"):
        try:
            environ = (proc / "environ").read_bytes()
            ppid = next(line for line in (proc / "status").read_text().splitlines() if line.startswith("PPid:"))
        except (OSError, StopIteration):
            continue
        if f"ANONSTREAM_DATA_DIR={data_dir}".encode() in environ and ppid.split()[1] == "1":
            with contextlib.suppress(OSError):
                os.kill(int(proc.name), signal.SIGKILL)
