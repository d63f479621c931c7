"""The intersection-attack harness: two overlapping days of crime reports released by batch runs or
by the stream's release path, and the releases an adversary would intersect.

Shared by ``bench/linking_attack.py`` (every engine, a table) and the tests
(``tests/stream/batch/test_linking_harness.py``); the attack itself is :mod:`core.attacks.linking`.
"""

from __future__ import annotations

import contextlib
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select

import migrations
from core.engines.registry import get_engine
from core.generators.crime import generate_crime_reports
from db import Database, PoolRepository
from db.models import ReleasedFingerprint, ReleaseRecords
from stream.config.settings import Settings
from stream.intake.validate import Clean, ReportValidator, to_incoming
from stream.io.specs import load_schema
from stream.worker.release import Orchestrator, window_policy

KEY = "linking-attack-bench-key"
SCHEMA = load_schema("crime")


def overlapping_days(per_day: int, overlap: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Day 1 (S1), day 2 (S2 plus re-keyed copies of ``overlap`` of day 1) and the shared rows."""
    rng = np.random.default_rng(seed)
    day1 = generate_crime_reports(rng, per_day=per_day, start="2024-03-01")
    day2 = generate_crime_reports(rng, per_day=per_day, start="2024-03-02", prefix="T")
    day2["station_id"] = "S2"
    day2["report_id"] = [f"S2-{i:06d}" for i in range(len(day2))]
    n = max(1, round(overlap * per_day))
    shared = day1.iloc[np.sort(rng.choice(len(day1), n, replace=False))].copy()
    copies = shared.assign(station_id="S2", report_id=[f"S2-copy-{i:05d}" for i in range(n)])
    return day1, pd.concat([day2, copies], ignore_index=True), shared.reset_index(drop=True)


def _settings(tmp: Path, engine: str, k: int, guard: str = "content", params: dict[str, Any] | None = None) -> Settings:
    # an engine that cannot enforce l runs at l = 1, as docs/privacy.md's table was measured (the stream's
    # default l = 2 would hold every one of its windows); the others keep the default
    diversity = {} if "l" in get_engine(engine).models else {"l": 1}
    return Settings.model_validate({"database_url": f"sqlite:///{tmp / 'ledger.db'}", "data_dir": tmp,
                                    "engine": engine, "k": k, "fingerprint_key": KEY, "idle_timeout_s": 1.0,
                                    "link_guard": guard, "engine_params": params or {}, **diversity})


def _ledger_releases(url: str, settings: Settings, shared: pd.DataFrame) -> tuple[list[pd.DataFrame], list[list[int]]]:
    """Every release's rows from the ledger, and per shared report the releases that hold it."""
    from stream.batch.history import fingerprint_rows

    db = Database(url)
    with db.read() as s:
        recs = list(s.execute(select(ReleaseRecords)).scalars())
        where = s.execute(select(ReleasedFingerprint.content_fp, ReleasedFingerprint.release_id)).all()
    db.dispose()
    order = {r.release_id: i for i, r in enumerate(recs)}
    frames = [pd.DataFrame(r.rows, columns=r.columns) for r in recs]
    by_content: dict[str, list[int]] = {}
    for cfp, rid in where:
        by_content.setdefault(cfp, []).append(order[rid])
    content = fingerprint_rows(shared, SCHEMA, settings).content
    return frames, [by_content.get(c, []) for c in content]


def run_batch(tmp: Path, engine: str, k: int, days: tuple[pd.DataFrame, pd.DataFrame], shared: pd.DataFrame,
              ledger: bool, params: dict[str, Any] | None = None) -> tuple[list[pd.DataFrame], list[list[int]]]:
    from stream.cli.main import main

    outs = []
    for i, day in enumerate(days):
        src, out = tmp / f"day{i + 1}.csv", tmp / f"day{i + 1}-{engine}-{ledger}.csv"
        day.to_csv(src, index=False)
        args = ["anonymize", str(src), "--spec", "crime", "--engine", engine, "-k", str(k), "--out", str(out)]
        args += [f"--param={n}={json.dumps(v)}" for n, v in (params or {}).items()]
        if ledger:
            args += ["--ledger", str(tmp / "ledger.db")]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            rc = main(args)
        if rc != 0:
            raise RuntimeError(f"anonymize {engine} day {i + 1} exited {rc}")
        outs.append(pd.read_csv(out, dtype=str, keep_default_na=False))
    if ledger:
        return _ledger_releases(f"sqlite:///{tmp / 'ledger.db'}", _settings(tmp, engine, k), shared)
    return outs, [[0, 1]] * len(shared)  # no ledger: every shared report is in both inputs (none suppressed)


def run_stream(tmp: Path, engine: str, k: int, days: tuple[pd.DataFrame, pd.DataFrame], shared: pd.DataFrame,
               guard: str, params: dict[str, Any] | None = None) -> tuple[list[pd.DataFrame], list[list[int]]]:
    settings = _settings(tmp, engine, k, guard, params)
    url = settings.db_url()
    migrations.upgrade(url)
    db = Database(url)
    pool = PoolRepository(db, window_policy(settings))
    orch = Orchestrator(settings, db, SCHEMA, "bench")
    validator = ReportValidator(SCHEMA, settings.person_columns)
    now = datetime(2030, 1, 1, tzinfo=UTC)
    for d, day in enumerate(days):
        incoming = []
        for rec in day.to_dict("records"):
            clean = validator.check(rec)
            assert isinstance(clean, Clean)
            incoming.append(to_incoming(clean, KEY.encode(), settings.window_key_for(clean.station_id), True,
                                        settings.content_columns))
        pool.ingest(incoming, [], now + timedelta(hours=d))
        orch.close_due(now + timedelta(hours=d, minutes=5))
    db.dispose()
    return _ledger_releases(url, settings, shared)
