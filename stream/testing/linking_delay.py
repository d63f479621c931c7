"""The intersection-attack harness (:mod:`stream.testing.linking`) over the delay mode: the same two
overlapping days pushed through a CASTLE stream per station (:class:`stream.worker.delay.DelayRunner`)
instead of windows, so the tests can compare what the attack learns from each."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

import migrations
from db import Database, PoolRepository
from stream.intake.validate import Clean, ReportValidator, to_incoming
from stream.io.specs import crime_spec_without_dp, load_schema
from stream.testing.linking import KEY, _ledger_releases, _settings
from stream.worker.delay import DelayRunner
from stream.worker.release import window_policy


def run_delay(tmp: Path, k: int, days: tuple[pd.DataFrame, pd.DataFrame], shared: pd.DataFrame,
              guard: str = "content", delay: dict[str, Any] | None = None, chunk: int = 25
              ) -> tuple[list[pd.DataFrame], list[list[int]]]:
    """Push each day in chunks of ``chunk`` reports through the delay mode (one step after each), let event
    time run out, and return the releases and, per shared report, the releases holding it."""
    settings = _settings(tmp, "castle", k, guard).with_updates(
        spec=crime_spec_without_dp(tmp / "spec"), delay={"enabled": True, **(delay or {"seconds": 3600, "tuples": 60})})
    schema = load_schema(settings.spec)
    url = settings.db_url()
    migrations.upgrade(url)
    db = Database(url)
    pool = PoolRepository(db, window_policy(settings))
    runner = DelayRunner(settings, db, schema, "bench")
    validator = ReportValidator(schema, settings.person_columns)
    now = datetime(2030, 1, 1, tzinfo=UTC)
    for d, day in enumerate(days):
        records = day.to_dict("records")
        for j in range(0, len(records), chunk):
            incoming = []
            for rec in records[j:j + chunk]:
                clean = validator.check(rec)
                assert isinstance(clean, Clean)
                incoming.append(to_incoming(clean, KEY.encode(), settings.window_key_for(clean.station_id), True,
                                            settings.content_columns))
            at = now + timedelta(hours=d, seconds=j)
            pool.ingest(incoming, [], at)
            runner.tick(at)
        runner.tick(now + timedelta(hours=d, minutes=59))  # quiet: event time runs out, every report leaves
    db.dispose()
    return _ledger_releases(url, settings, shared)
