"""Issue 39: the stream requires distinct l >= 2 by default, so no released class gives away its offence.

The check is an outside one: the released rows grouped by their QI label columns with pandas, distinct
offences counted per group; nothing of the engine's or the verifier's is trusted.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from pydantic import SecretStr
from sqlalchemy import select

import migrations
from core.encoding import encode
from core.engines.registry import get_engine
from core.verify import verify_release
from db import Database
from db.models import Release, ReleaseRecords, Window
from db.windows import WindowPolicy
from stream.config.privacy import StreamPrivacy
from stream.config.settings import Settings
from stream.io.specs import load_schema
from stream.io.tables import read_for_spec
from stream.testing.reports import day_of_reports, spec_ref
from stream.worker.engine_choice import resolve_engine
from stream.worker.risk import engine_params, policy_requirement
from stream.worker.service import WorkerService

NYPD = Path(__file__).resolve().parents[4] / "shared" / "data" / "nypd-arrests-queens-2021" / \
    "nypd_arrests_queens_2021.csv"


def single_offence_groups(rows: pd.DataFrame, qis: list[str], sensitive: str) -> pd.DataFrame:
    """The outside check: groups of equal released QI labels holding one distinct sensitive value."""
    stats = rows.astype({q: str for q in qis}).groupby(qis, dropna=False)[sensitive].agg(["nunique", "size"])
    return stats[stats["nunique"] < 2]


def _stream(tmp_path: Path, stations: int, per_station: int, seed: int, rewrite: Any = None,
            **updates: Any) -> tuple[Database, WorkerService, list[str]]:
    """One worker (no broker) over a generated day; every station's window closed. ``rewrite``: a function
    changing each report before it is sent."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(), windows=WindowPolicy(cap=per_station),
                        fingerprint_key=SecretStr("ell-test-key"), release_concurrency=1, release_processes=False,
                        **updates)
    db = Database(settings.db_url())
    service = WorkerService(settings, db, load_schema(settings.spec), "w1")

    async def _no_send(topic: str, key: bytes | None, value: bytes) -> asyncio.Future[None]:
        raise AssertionError("nothing is dead-lettered here")

    day = day_of_reports(stations, per_station, seed=seed)
    reports = [rewrite(r) if rewrite else r for s in sorted(day) for r in day[s]]
    asyncio.run(service.handle_batch([json.dumps(r).encode() for r in reports], _no_send))
    due = service.orchestrator.due(datetime.now(UTC))
    assert len(due) == stations
    windows = [wid for wid, _ in due]
    for wid, why in due:
        service.orchestrator.close_window(wid, why, datetime.now(UTC))
    return db, service, windows


def test_default_stream_releases_of_crime_data_have_no_single_offence_class(tmp_path: Path) -> None:
    db, service, _ = _stream(tmp_path, stations=3, per_station=400, seed=11)
    schema = service.orchestrator.schema
    assert service.orchestrator.engine_name == "cg-diverse"  # what the default l calls for
    with db.read() as s:
        releases = s.execute(select(Release)).scalars().all()
        assert len(releases) == 3
        for rel in releases:
            records = s.execute(select(ReleaseRecords).where(ReleaseRecords.release_id == rel.id)).scalar_one()
            rows = pd.DataFrame(records.rows, columns=records.columns)
            assert len(rows) == rel.manifest["counts"]["released"] > 0
            assert single_offence_groups(rows, schema.qi_names, str(schema.sensitive)).empty, rel.id
            assert rel.params["l"] == 2 and rel.l_achieved is not None and rel.l_achieved >= 2


def _one_theft_in_ten(report: dict[str, Any]) -> dict[str, Any]:
    """Nine reports in ten are thefts, so most small classes hold one offence (a stable hash decides)."""
    digit = int(hashlib.sha256(str(report["report_id"]).encode()).hexdigest(), 16) % 10
    return {**report, "offence": report["offence"] if digit == 0 else "Theft"}


def test_an_engine_without_l_is_held_with_a_reason_that_says_l_and_what_to_do(tmp_path: Path,
                                                                              caplog: pytest.LogCaptureFixture) -> None:
    db, _service, windows = _stream(tmp_path, stations=1, per_station=300, seed=5, rewrite=_one_theft_in_ten,
                                    engine="cg-kanon")
    assert "engine cg-kanon cannot enforce l=2" in caplog.text
    with db.read() as s:
        window = s.execute(select(Window).where(Window.id == windows[0])).scalar_one()
        assert window.state == "held", window.hold_reason
        reason = str(window.hold_reason)
        assert "l-diversity" in reason and "fewer than l=2 distinct values of 'offence'" in reason
        assert "cg-diverse" in reason and "l = 1" in reason
        assert s.execute(select(Release)).first() is None  # nothing stored, so nothing published


def test_the_same_window_released_by_the_default_engine(tmp_path: Path) -> None:
    db, service, _ = _stream(tmp_path, stations=1, per_station=300, seed=5, rewrite=_one_theft_in_ten)
    schema = service.orchestrator.schema
    with db.read() as s:
        rel = s.execute(select(Release)).scalar_one()
        records = s.execute(select(ReleaseRecords).where(ReleaseRecords.release_id == rel.id)).scalar_one()
    rows = pd.DataFrame(records.rows, columns=records.columns)
    assert rel.engine == "cg-diverse" and (rows["offence"] == "Theft").mean() > 0.8
    assert single_offence_groups(rows, schema.qi_names, "offence").empty


def test_k_only_runs_cg_kanon_with_no_l_to_verify() -> None:
    settings = Settings(privacy=StreamPrivacy(l=1))  # the flat name, as a command-line option gives it
    assert resolve_engine(settings) == "cg-kanon" and resolve_engine(Settings()) == "cg-diverse"
    assert engine_params(settings, get_engine("cg-kanon")).l is None
    assert policy_requirement(get_engine("cg-kanon").Params(k=5), settings).l is None


@pytest.mark.slow
def test_nypd_monthly_windows_through_the_stream_defaults_have_no_single_offence_class() -> None:
    """The NYPD export, one window per month (the README's 31-day windows), through the stream's default
    engine and parameters in batch (a stream run of the file takes minutes)."""
    schema = load_schema("nypd")
    frame = read_for_spec(NYPD, schema.spec, schema)
    settings = Settings()
    engine = get_engine(resolve_engine(settings))
    params = engine_params(settings, engine)
    month = pd.to_datetime(frame["ARREST_DATE"], format="%m/%d/%Y").dt.month
    found = {}
    for m, window in frame.groupby(month, sort=True):
        window = window.reset_index(drop=True)
        release = engine.anonymize(encode(window, schema), params, np.random.default_rng([0, int(m)]))
        assert verify_release(window, release, schema, policy_requirement(release.requirement, settings)).ok
        found[m] = len(single_offence_groups(release.rows, schema.qi_names, str(schema.sensitive)))
    assert len(found) == 9 and sum(found.values()) == 0, found
