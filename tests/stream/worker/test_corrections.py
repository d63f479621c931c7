"""Corrections, surfaced: a correction of a pending report is what gets released; a correction of a
released report is counted (``push``, ``status``, the console) and never released again."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import SecretStr
from sqlalchemy import func, select

import migrations
from db import Database, IngestResult, PoolRepository
from db.models import PendingReport, Release, ReleasedFingerprint, ReleaseRecords
from db.windows import WindowPolicy
from stream.config.privacy import StreamPrivacy
from stream.config.settings import Settings
from stream.intake.fingerprints import fingerprint
from stream.io.specs import load_schema
from stream.ops.broker import EmbeddedBroker
from stream.testing.reports import day_of_reports, ingest_reports, spec_ref
from stream.testing.services import PostgresServer
from stream.worker.release import Orchestrator, window_policy

pytestmark = [pytest.mark.postgres]
KEY = "corrections-test-key"


def _ingest(settings: Settings, pool: PoolRepository, reports: list[dict[str, Any]], now: datetime) -> IngestResult:
    return ingest_reports(settings, pool, reports, now, KEY.encode())


def _other(value: str, values: list[str]) -> str:
    return next(v for v in values if v != value)


@pytest.mark.broker
def test_pending_corrections_are_released_and_released_ones_counted(pg: PostgresServer, kafka: EmbeddedBroker,
                                                                    tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg.create_database("corrections")
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(), privacy=StreamPrivacy(k=5),
                        windows=WindowPolicy(idle_timeout_s=1.0), fingerprint_key=SecretStr(KEY))
    db = Database(url)
    pool = PoolRepository(db, window_policy(settings))
    orch = Orchestrator(settings, db, load_schema(settings.spec), "corrections-test")
    original = day_of_reports(1, 200, seed=8)["S1"]
    offences = sorted({str(r["offence"]) for r in original})
    now = datetime(2030, 1, 1, tzinfo=UTC)

    # 1. five reports corrected while pending: the corrected versions are released
    _ingest(settings, pool, original, now)
    fixes = [{**r, "offence": _other(str(r["offence"]), offences)} for r in original[:5]]
    res = _ingest(settings, pool, fixes, now)
    assert (res.accepted, res.corrections, res.replaced) == (0, 5, 5)
    assert orch.close_due(now + timedelta(minutes=5))
    with db.read() as s:
        pooled = {fp: (st, d) for fp, st, d in s.execute(
            select(PendingReport.fingerprint, PendingReport.state, PendingReport.data)).all()}
        (columns, rows), = s.execute(select(ReleaseRecords.columns, ReleaseRecords.rows)).all()
        released_before = s.execute(select(func.count()).select_from(ReleasedFingerprint)).scalar_one()
    for r, fix in zip(original[:5], fixes, strict=True):
        assert pooled[fingerprint(KEY.encode(), "S1", str(r["report_id"]))][1]["offence"] == fix["offence"]
    idx = columns.index("offence")
    released_pool = Counter(d["offence"] for st, d in pooled.values() if st == "released")
    assert Counter(row[idx] for row in rows) == released_pool  # the release carries the corrected content

    # 2. push released reports again, five of them corrected: push says so before the worker sees them
    released_rows = [r for r in original
                     if pooled[fingerprint(KEY.encode(), "S1", str(r["report_id"]))][0] == "released"]
    late = [{**r, "offence": _other(str(r["offence"]), offences)} for r in released_rows[5:10]]
    again = late + released_rows[10:20]
    path = tmp_path / "again.csv"
    pd.DataFrame(again).to_csv(path, index=False)
    topic = f"t{uuid.uuid4().hex[:8]}.reports"
    from stream.cli.main import main
    from stream.ops.broker import ensure_topics

    ensure_topics(kafka.bootstrap, {topic: 1})
    monkeypatch.setenv("ANONSTREAM_DATABASE_URL", url)
    monkeypatch.setenv("ANONSTREAM_FINGERPRINT_KEY", KEY)
    monkeypatch.setenv("ANONSTREAM_HOME", str(tmp_path))
    capsys.readouterr()
    assert main(["push", str(path), "--station", "S1", "--broker", kafka.url, "--topic", topic]) == 0
    printed = capsys.readouterr().out
    assert "sent 15 report(s)" in printed
    assert ("15 of them already known to the ledger: 10 duplicate(s), 0 correction(s) replacing pending "
            "reports, 5 correction(s) of released reports (counted, never released again)") in printed
    assert str(released_rows[5]["report_id"]) not in printed  # counts only

    # 3. the worker ingests them: counted, nothing released again
    res = _ingest(settings, pool, again, now + timedelta(hours=1))
    assert (res.accepted, res.duplicates, res.corrections, res.replaced) == (0, 10, 5, 0)
    assert orch.close_due(now + timedelta(hours=1, minutes=5)) == []
    with db.read() as s:
        assert s.execute(select(func.count()).select_from(ReleasedFingerprint)).scalar_one() == released_before
        assert s.execute(select(func.count()).select_from(Release)).scalar_one() == 1
    from stream.console.health_page import health_page
    from stream.console.service import ConsoleService

    health = ConsoleService(settings, db, broker_timeout_s=1.0).health()
    (row,) = [r for r in health["pool"]["stations"] if r["station"] == "S1"]
    assert (row["duplicates"], row["corrections_replaced"], row["corrections_released"]) == (10, 5, 5)
    page = health_page(health)
    assert "corrections not re-released" in page and "<td>10</td><td>5</td><td>5</td>" in page
    db.dispose()
    assert main(["status", "--database", url]) == 0
    out = capsys.readouterr().out
    assert "duplicates    10  corrections replaced 5 / not re-released 5" in out
