"""The ledger side of "no message can stop the stream", on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest

from db import PoolRepository, WindowPolicy
from db.models import Counter, DlqEvent
from stream.guards import Limits
from stream.io.specs import load_schema
from stream.validate import ReportValidator, screen_batch
from tests.stream.reports import day_of_reports, spec_ref
from tests.stream.test_guards import CAUSES, KEY, NOW, raw_of


@pytest.fixture(scope="module")
def validator() -> ReportValidator:
    return ReportValidator(load_schema(spec_ref()), ("name", "dob"), Limits())


@pytest.fixture(scope="module")
def good() -> dict[str, Any]:
    return day_of_reports(1, 5, seed=5)["S1"][0]


def test_ledger_causes_on_postgres_and_sqlite(ledger_db, validator, good) -> None:  # type: ignore[no-untyped-def]
    """NUL and overlong station ids crashed the DLQ counter write on PostgreSQL; reused ids were silent."""
    pool = PoolRepository(ledger_db, WindowPolicy(), "registered")
    from db.stations import StationRegistry

    StationRegistry(ledger_db).add(["S1"], "test", NOW)
    raws = [raw_of(c, good) for c in sorted(CAUSES)]
    reused = good | {"event_time": "2024-03-01T23:59:00Z", "offence": "Fraud"}  # same id, another event
    correction = good | {"offence": "Fraud" if good["offence"] != "Fraud" else "Theft"}
    other = good | {"station_id": "S9", "report_id": "S9-1"}  # valid but unregistered
    first = screen_batch(validator, [*raws, json.dumps(good).encode()], KEY, lambda st: f"station:{st}", True, NOW)
    res1 = pool.ingest(first.accepted, first.rejections, NOW)
    assert res1.accepted == 1 and res1.rejected == len(CAUSES)
    second = screen_batch(validator, [json.dumps(x).encode() for x in (reused, correction, other)], KEY,
                          lambda st: f"station:{st}", True, NOW)
    res2 = pool.ingest(second.accepted, second.rejections, NOW)
    assert (res2.accepted, res2.corrections) == (0, 1)
    assert [r for _i, r, _m in res2.refused] == ["report-id-reused", "unknown-station"]
    with ledger_db.read() as s:
        counters = {(c.station_id, c.kind, c.reason): c.count for c in s.query(Counter)}
        assert counters[("S1", "dlq", "report-id-reused")] == 1
        assert counters[("(unregistered)", "dlq", "unknown-station")] == 1
        assert counters[("S1", "correction", "correction")] == 1
        assert all(len(st) <= 64 and "\x00" not in st for st, _k, _r in counters)
        assert s.query(DlqEvent).count() == len(CAUSES) + 2


