"""The console's queries and controls on a real PostgreSQL ledger (JSON station filter, aggregates, writes)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from db.console_queries import ReleaseFilter
from tests.stream.console.seed import Seeded

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def pg_seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    from stream.testing.services import postgres
    from tests.stream.console.seed import build

    url = postgres().create_database("console")
    s = build(url, Path(tmp_path_factory.mktemp("console-pg")), pbg=False)
    yield s
    s.db.dispose()


def test_queries_on_postgres(pg_seeded: Seeded) -> None:
    from stream.console.service import ConsoleService

    svc = ConsoleService(pg_seeded.settings, pg_seeded.db, broker_timeout_s=1.0)
    assert svc.db.dialect == "postgresql"
    everything = svc.releases(ReleaseFilter())
    assert {r["id"] for r in everything["releases"]} == set(pg_seeded.releases.values())
    one = svc.releases(ReleaseFilter(station="S3"))["releases"]
    assert [r["id"] for r in one] == [pg_seeded.releases["S3"]]
    assert svc.releases(ReleaseFilter(station="S%"))["releases"] == []  # LIKE wildcards are escaped
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    assert svc.releases(ReleaseFilter(since=tomorrow))["total"] == 0

    d = svc.release(pg_seeded.releases["S1"])
    assert d is not None and d["analysis"]["privacy_from_labels"]["k"] == d["k"]
    h = svc.health()
    pool = {r["station"]: r for r in h["pool"]["stations"]}
    assert pool["T1"]["pending"] == 3 and pool["T1"]["oldest_pending_age_s"] > 0
    assert h["dlq"]["by_reason"] == pg_seeded.rejected
    assert pg_seeded.held_window in {w["id"] for w in h["windows"]["held"]}
    text = json.dumps([everything, d, h, svc.audit(500)]).lower()
    assert not [i for i in pg_seeded.identifiers if i.lower() in text]


def test_controls_on_postgres(pg_seeded: Seeded) -> None:
    from stream.console.service import ConsoleService

    svc = ConsoleService(pg_seeded.settings, pg_seeded.db, broker_timeout_s=1.0)
    svc.pause("S2", True, "operator:test")
    svc.pause("S2", True, "operator:test")  # idempotent
    assert svc.health()["controls"]["S2"]["paused"] is True
    svc.pause("S2", False, "operator:test")
    assert svc.health()["controls"]["S2"]["paused"] is False
    out = svc.release_window(pg_seeded.held_window, "operator:test", "carry")
    assert out["state"] == "carried"
    actions = [a["action"] for a in svc.audit(100) if a["actor"] == "operator:test"]
    assert actions.count("station-paused") == 2 and actions.count("station-resumed") == 1
    assert "window-released" in actions
