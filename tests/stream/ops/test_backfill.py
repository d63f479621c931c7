"""A backfill (history pushed out of order) is windowed by each report's own event time.

The review: a station pushing a year of history not sorted by time had 7,654 of 9,133 reports
released in one window labelled 2020-12-31, because late reports went to the latest open window.
Here 12 days of one station arrive shuffled in batches; each day is released as its own window,
and every manifest's ``event_time`` span lies inside its window. Real PostgreSQL, the real
orchestrator (in-process), Mondrian for speed.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from pydantic import SecretStr
from sqlalchemy import select

import migrations
from db import Database, PoolRepository
from db.models import Release
from db.windows import WindowPolicy
from stream.config.privacy import StreamPrivacy
from stream.config.settings import Settings
from stream.intake.validate import Clean, ReportValidator, to_incoming
from stream.io.specs import load_schema
from stream.testing.reports import DAY, day_of_reports, spec_ref
from stream.testing.services import PostgresServer
from stream.worker.release import Orchestrator, window_policy

pytestmark = [pytest.mark.postgres]
KEY = "backfill-test-key-0123456789abcdefgh"
DAYS, PER_DAY = 12, 20


def test_shuffled_history_is_released_day_by_day(pg: PostgresServer, tmp_path: Path) -> None:
    url = pg.create_database("backfill")
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(), privacy=StreamPrivacy(k=5),
                        engine="mondrian", fingerprint_key=SecretStr(KEY),
                        windows=WindowPolicy(min_release_rows=1, idle_timeout_s=1.0))  # day by day
    schema = load_schema(settings.spec)
    db = Database(url)
    try:
        pool = PoolRepository(db, window_policy(settings), settings.station_check())
        validator = ReportValidator(schema, ())
        orch = Orchestrator(settings, db, schema, "backfill-test")
        history = []
        for d in range(DAYS):
            rows = day_of_reports(1, PER_DAY, seed=40 + d, day=DAY + timedelta(days=d))["S1"]
            history += [r | {"report_id": f"S1-{d}-{i}"} for i, r in enumerate(rows)]
        order = np.random.default_rng(7).permutation(len(history))
        now = datetime(2024, 4, 1, tzinfo=UTC)
        for b in range(0, len(order), 40):  # arrival order: shuffled, in batches like the worker's
            incoming = []
            for i in order[b:b + 40]:
                clean = validator.check(history[int(i)], now)
                assert isinstance(clean, Clean)
                incoming.append(to_incoming(clean, KEY.encode(), settings.window_key_for("S1"), False))
            assert pool.ingest(incoming, [], now).accepted == len(incoming)
        assert len(orch.close_due(now + timedelta(minutes=1))) == DAYS
        with db.read() as s:
            manifests = list(s.execute(select(Release.manifest)).scalars())
        assert sorted(m["window"]["start"][:10] for m in manifests) == [
            (DAY + timedelta(days=d)).date().isoformat() for d in range(DAYS)]
        for m in manifests:
            w, span = m["window"], m["event_time"]
            assert (w["first_day"], w["last_day"]) == (span["first"], span["last"]), (w, span)  # days
            assert w["start"][:10] <= span["first"] <= span["last"] < w["end"][:10], (w, span)
            assert m["counts"]["received"] == PER_DAY
    finally:
        db.dispose()
