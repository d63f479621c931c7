"""Risk bounds in the stream: a release over the operator's max_risk is refused by the verifier and
its window held (nothing stored or published); an engine that enforces the bound releases the window
with the risk profile in the manifest."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import select

import migrations
from db import Database
from db.models import Release, Window
from db.windows import WindowPolicy
from stream.config.privacy import StreamPrivacy
from stream.config.settings import Settings
from stream.io.specs import load_schema
from stream.testing.reports import day_of_reports, spec_ref
from stream.worker.service import WorkerService


def _release_one_window(tmp_path: Path, **updates: Any) -> tuple[Database, str, str | None]:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(),
                        privacy=StreamPrivacy(k=5, max_risk=0.1), windows=WindowPolicy(cap=80),
                        fingerprint_key=SecretStr("risk-test-key"), release_concurrency=1, release_processes=False,
                        **updates)
    db = Database(settings.db_url())
    service = WorkerService(settings, db, load_schema(settings.spec), "w1")

    async def _no_send(topic: str, key: bytes | None, value: bytes) -> asyncio.Future[None]:
        raise AssertionError("nothing is dead-lettered here")

    rows = day_of_reports(1, 80, seed=5)["S1"]
    asyncio.run(service.handle_batch([json.dumps(r).encode() for r in rows], _no_send))
    (wid, why), = service.orchestrator.due(datetime.now(UTC))
    rid = service.orchestrator.close_window(wid, why, datetime.now(UTC))
    return db, wid, rid


def test_release_over_max_risk_is_refused_and_the_window_held(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # k-member enforces k only: its k=5 release gives every record 5 candidates, a risk of 0.2 > 0.1
    db, wid, rid = _release_one_window(tmp_path, engine="kmember")
    assert "engine kmember cannot enforce max_risk" in caplog.text
    assert rid is None
    with db.read() as s:
        window = s.execute(select(Window).where(Window.id == wid)).scalar_one()
        assert window.state == "held"
        assert window.hold_reason is not None
        assert "verification failed" in window.hold_reason and "max_risk=0.1" in window.hold_reason
        assert "highest prosecutor risk is 0.2000" in window.hold_reason and "k=5" not in window.hold_reason
        assert s.execute(select(Release)).first() is None  # nothing stored, so nothing published


def test_engine_enforcing_max_risk_releases_with_its_risk_profile(tmp_path: Path) -> None:
    db, _wid, rid = _release_one_window(tmp_path, engine="mondrian")
    assert rid is not None
    with db.read() as s:
        rel = s.execute(select(Release).where(Release.id == rid)).scalar_one()
        risk = rel.manifest["privacy"]["risk"]
        assert rel.k_achieved >= 10 and risk["prosecutor"]["highest"] <= 0.1
        assert rel.verification["max_risk"] <= 0.1 and rel.params["max_risk"] == 0.1
        assert risk["records"] == rel.manifest["counts"]["released"] and risk["sampling_fraction"] == 1.0
