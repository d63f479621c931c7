"""A worker releasing counts is SIGKILLed at each step in turn, then recovers: the ledger's spends and the
published count tables agree exactly (no noise published without its spend, no spend without its release,
a re-publish sends the stored tables)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from db.budget import all_blocks, spends
from db.models import Release
from stream.ops.broker import EmbeddedBroker
from stream.testing.reports import day_of_reports
from stream.testing.scenario import Scenario
from stream.testing.services import PostgresServer

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.slow]
STEPS = ("anonymize", "after-noise", "after-ledger-write", "mid-publish")  # claim, anonymize, noise, store, send


def _ledger(sc: Scenario) -> tuple[dict[str, Any], dict[str, float], dict[str, dict[str, float]]]:
    """Stored releases' dp sections, each block's recorded spend, and the spends per release and block."""
    with sc.db.read() as s:
        stored = {r.id: r.manifest.get("dp") for r in s.execute(select(Release)).scalars()}
        blocks = {b.block: float(b.spent_rho) for b in all_blocks(s)}
        per_release: dict[str, dict[str, float]] = defaultdict(dict)
        for sp in spends(s):
            assert sp.release_id is not None, "a spend without its release"
            per_release[sp.release_id][sp.block] = per_release[sp.release_id].get(sp.block, 0.0) + float(sp.rho)
    return stored, blocks, per_release


def _agree(sc: Scenario) -> dict[str, dict[str, Any]]:
    """Every spend belongs to a stored release with its tables, every release with tables has its spends,
    and each block's spend is the sum of its releases' ρ."""
    stored, blocks, spends = _ledger(sc)
    assert set(spends) <= set(stored), "a spend whose release was never stored"
    per_block: dict[str, float] = defaultdict(float)
    for rid, dp in stored.items():
        assert dp is not None and dp["refused"] is None and dp["tables"], rid
        assert spends[rid] == pytest.approx({b["block"]: dp["rho"] for b in dp["blocks"]}), rid
        for b in dp["blocks"]:
            per_block[b["block"]] += dp["rho"]
    assert blocks == pytest.approx(dict(per_block))
    return stored


def test_kill_at_each_step_of_a_release_with_counts(kafka: EmbeddedBroker, pg: PostgresServer, tmp_path: Path) -> None:
    sc = Scenario(kafka, pg, tmp_path, claim_lease_s=3.0)
    try:
        sc.push(day_of_reports(2, 200, seed=7))
        for point in STEPS:
            crashing = sc.start_worker(fault_point=point)
            sc.wait_for(lambda w=crashing: w.poll() is not None, timeout=120)
            assert crashing.returncode == -9, (point, sc.logs()[-2000:])
            _agree(sc)
        sc.start_worker()
        sc.wait_settled(timeout=180)
        stored = _agree(sc)
        published = {m["release_id"]: m for m in sc.read_topic(sc.settings.topic_releases)}
        assert set(published) == set(stored) and stored
        for rid, manifest in published.items():
            assert manifest["dp"] == stored[rid]  # the stored tables, never fresh noise
    finally:
        sc.close()
