"""Reproducible releases end to end: the same window, settings and seed stored in two fresh ledgers give
byte-identical records and signed manifests (no creation time, no timings, no wall-clock diagnostics),
also while another process keeps a core busy."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import migrations
from db import Database, PoolRepository
from stream.config.settings import Settings
from stream.io.specs import load_schema
from stream.testing.load import busy_core
from stream.testing.reports import day_of_reports, ingest_reports, spec_ref
from stream.wire.records import Manifest
from stream.worker.release import Orchestrator, window_policy

KEY = "reproducible-release-test-key"
SIGNING = "11" * 32
NOW = datetime(2030, 1, 1, tzinfo=UTC)


# Work budgets only: time_limit = 0 turns the engines' wall-clock safety cap off (pbg-ea has none).
NO_WALL_CAP = {"engine_params": {"time_limit": 0}}
# cg-kanon and ils enforce k only: run with l = 1 (k only), not the stream's default distinct l = 2
ENGINES: dict[str, dict[str, Any]] = {"cg-kanon": {"l": 1, **NO_WALL_CAP}, "ils": {"l": 1, **NO_WALL_CAP},
                                      "cg-diverse": {"l": 2, **NO_WALL_CAP},
                                      "pbg-ea": {"engine_params": {"population": 8, "iterations": 10}}}


def release_bytes(tmp: Path, engine: str, reports: list[dict[str, Any]]) -> tuple[bytes, list[bytes]]:
    """Ingest ``reports`` into a fresh SQLite ledger, close the window, return the encoded release."""
    url = f"sqlite:///{tmp / 'ledger.db'}"
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp, spec=spec_ref(), k=5, fingerprint_key=KEY,
                        signing_key=SIGNING, idle_timeout_s=1.0, engine=engine, sample_seed=11, **ENGINES[engine])
    db = Database(url)
    try:
        ingest_reports(settings, PoolRepository(db, window_policy(settings)), reports, NOW, KEY.encode())
        orch = Orchestrator(settings, db, load_schema(settings.spec), "repro-test", keep_encoded=True)
        (rid,) = orch.close_due(NOW + timedelta(minutes=5))
        encoded = orch.take_encoded(rid)
        assert encoded is not None
        return encoded
    finally:
        db.dispose()


@pytest.mark.parametrize("engine", list(ENGINES))
def test_same_window_same_bytes_in_two_fresh_ledgers(tmp_path, engine) -> None:  # type: ignore[no-untyped-def]
    reports = day_of_reports(1, 300, seed=3)["S1"]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    manifest_a, records_a = release_bytes(tmp_path / "a", engine, reports)
    with busy_core() as spinner:  # the other core, busy
        manifest_b, records_b = release_bytes(tmp_path / "b", engine, reports)
        assert spinner.poll() is None
    assert records_a == records_b
    a, b = json.loads(manifest_a), json.loads(manifest_b)
    for m in (a, b):  # the count tables' noise is fresh in each computation, never seeded (docs/stream.md)
        m.pop("signature")
        for table in (m.get("dp") or {}).get("tables", []):
            assert table.pop("counts")
    assert a == b
    Manifest.model_validate(json.loads(manifest_a))  # the model no longer needs created_at
    assert json.loads(manifest_a)["diagnostics"]["budget_cap_hit"] is False  # the budget, not a cap, stopped it
    assert b"created_at" not in manifest_a and b"timings" not in manifest_a and b"search_s" not in manifest_a
