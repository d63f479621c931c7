"""Delay mode end to end (real broker, real PostgreSQL, worker processes): a worker SIGKILLed mid-stream and a
new one lose and duplicate nothing; every report is released once or counted suppressed; no report left
later than delta (tuples and event seconds, from the manifests); every published class holds k reports and
l offences (a pandas group-by over the released labels)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import select

from db.models import PendingReport, ReleasedFingerprint
from stream.io.specs import crime_spec_without_dp
from stream.ops.broker import EmbeddedBroker
from stream.testing.reports import day_of_reports
from stream.testing.scenario import Scenario
from stream.testing.services import PostgresServer

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.slow]
DELAY = {"enabled": True, "seconds": 15.0, "tuples": 80}


def _states(sc: Scenario) -> dict[str, int]:
    with sc.db.read() as s:
        rows = s.execute(select(PendingReport.state)).scalars().all()
    return {st: rows.count(st) for st in set(rows)}


def test_delay_mode_survives_sigkill_and_bounds_every_delay(kafka: EmbeddedBroker, pg: PostgresServer,
                                                            tmp_path: Path) -> None:
    sc = Scenario(kafka, pg, tmp_path, spec=crime_spec_without_dp(tmp_path / "spec"), k=4, claim_lease_s=3.0,
                  delay=DELAY)
    try:
        reports = day_of_reports(2, 240, seed=21)
        base = datetime.now(UTC) - timedelta(hours=1)
        for rows in reports.values():  # 20 reports per event second: the tuple cap binds while they flow,
            for i, r in enumerate(rows):  # event seconds once the stations go quiet
                r["event_time"] = (base + timedelta(seconds=i / 20)).isoformat()
        first = {st: rows[:120] for st, rows in reports.items()}
        rest = {st: rows[120:] for st, rows in reports.items()}
        worker = sc.start_worker()
        sc.push(first)
        sc.wait_for(lambda: _states(sc).get("released", 0) >= 40, timeout=120)
        worker.kill()  # SIGKILL mid-stream: reports wait in the saved state, others are not read yet
        worker.wait()
        sc.push(rest)
        sc.start_worker()
        distinct = sum(len(v) for v in reports.values())

        def done() -> bool:
            st, acc = _states(sc), sc.accounting()
            return sum(st.values()) == distinct and set(st) <= {"released", "suppressed"} and \
                acc.get("releases_stored", 1) == 0

        sc.wait_for(done, timeout=180)
        with sc.db.read() as s:
            fps = list(s.execute(select(ReleasedFingerprint.fingerprint)).scalars())
        states = _states(sc)
        assert len(fps) == len(set(fps)) == states.get("released", 0)  # released once each
        _asm, complete = sc.releases()
        manifests = [m for m, _ in complete]
        assert sum(m["counts"]["released"] for m in manifests) == states.get("released", 0)
        assert sum(m["counts"]["suppressed"] for m in manifests) == states.get("suppressed", 0)
        for m in manifests:
            d = m["diagnostics"]["delay"]
            assert d["latency_tuples_max"] <= DELAY["tuples"]
            # within the bound: the manifest rounds to the millisecond, so a latency of 14.9996 s reads 15.0
            assert d["latency_seconds_max"] <= DELAY["seconds"]
            assert sum(d["suppressed"].values()) == m["counts"]["suppressed"]
        frames = [pd.DataFrame([{**r["values"], "class_id": r["class_id"]} for r in recs], dtype=object)
                  .assign(release=m["release_id"]) for m, recs in complete if recs]
        released = pd.concat(frames)
        assert len(released) == states.get("released", 0)  # no record published twice
        labels = [c for c in ("age", "sex", "suburb", "postcode", "reporter") if c in released.columns]
        classes = released.groupby(["release", *labels])
        assert (classes.size() >= 4).all()
        assert (classes["offence"].nunique() >= 2).all()
    finally:
        sc.close()
