"""Prometheus exports each privacy-budget block's remaining ρ."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import migrations
from db import Database
from db.budget import charge
from stream.worker.ledger_metrics import budget_family


def test_budget_remaining_per_recent_block(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrations.upgrade(url)
    db = Database(url)
    now = datetime.now(UTC)
    try:
        with db.unit() as s:
            charge(s, ["station:S1/day:2030-01-01", "station:S2/day:2030-01-01"], 0.25, 1.0, purpose="test",
                   release_id=None, now=now)
            charge(s, ["station:S1/day:2020-01-01"], 0.5, 1.0, purpose="test", release_id=None,
                   now=now - timedelta(days=30))
        with db.read() as s:
            family, caps = budget_family(s, now)
        values = {sample.labels["block"]: sample.value for sample in family.samples}
        assert values == {"station:S1/day:2030-01-01": 0.75, "station:S2/day:2030-01-01": 0.75}
        assert {sample.labels["block"]: sample.value for sample in caps.samples} == dict.fromkeys(values, 1.0)
    finally:
        db.dispose()
