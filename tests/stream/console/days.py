"""A multi-day ledger for the period sign-off and the page tests, built through the worker's own path (validate,
pending pool, orchestrator), as seed.py does for one day.

Days 2024-04-01 to 2024-04-04; stations S1-S3 every day (S3 asks k = 10, the others k = 5) with a different
number of reports per station and day; on 04-02 station H1's window is held (its engine rejects a parameter);
on 04-03 station T1 sends 3 reports (< k), a carried window. ``inputs`` records what was sent per window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from db.windows import WindowPolicy
from stream.config.privacy import StreamPrivacy
from tests.stream.console.seed import TOKEN, Seeded, _validate

DAYS = [datetime(2024, 4, d, tzinfo=UTC) for d in (1, 2, 3, 4)]
K = {"S1": 5, "S2": 5, "S3": 10}


@dataclass
class Days:
    seeded: Seeded
    inputs: dict[tuple[str, str], int] = field(default_factory=dict)  # (station, day) -> reports sent
    releases: dict[tuple[str, str], str] = field(default_factory=dict)  # (station, day) -> release id
    held: dict[tuple[str, str], str] = field(default_factory=dict)  # (station, day) -> window id
    carried: dict[tuple[str, str], str] = field(default_factory=dict)


def per_station(day_index: int, station: str) -> int:
    """How many reports ``station`` sends on day ``day_index`` (differs by station and day)."""
    return 30 + 7 * day_index + 4 * int(station[1:])


def build_days(url: str, data_dir: Path, held: bool = True) -> Days:
    """The ledger above (without H1 and T1 when ``held`` is false: a deployment with nothing waiting)."""
    import migrations
    from db import Database, PoolRepository
    from stream.config.settings import Settings
    from stream.io.specs import load_schema
    from stream.station.simulate import generate_day
    from stream.worker.release import Orchestrator, window_policy

    settings = Settings(data_dir=data_dir, database_url=url, spec="crime", engine="mondrian",
                        privacy=StreamPrivacy(k=5),
                        operator_token=SecretStr(TOKEN), fingerprint_key=SecretStr("console-days-key"),
                        windows=WindowPolicy(min_release_rows=1, idle_timeout_s=60))
    migrations.upgrade(url)
    db = Database(url)
    schema = load_schema(settings.spec)
    pool = PoolRepository(db, window_policy(settings))
    out = Days(Seeded(settings, db))
    now = datetime.now(UTC) - timedelta(minutes=30)
    for i, day in enumerate(DAYS):
        day_reports = generate_day(len(K), max(per_station(i, st) for st in K), 100 + i, day)
        groups: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
            st: (day_reports[st][:per_station(i, st)], {"k": K[st]}) for st in K}
        if held and i == 1:
            (reports,) = generate_day(1, 20, 200 + i, day, prefix="H").values()
            groups["H1"] = (reports, {"engine_params": {"no_such_parameter": 1}})
        if held and i == 2:
            (reports,) = generate_day(1, 10, 300 + i, day, prefix="T").values()
            groups["T1"] = (reports[:3], {})
        for station, (reports, overrides) in groups.items():
            good, rejected = _validate(settings, schema, reports)
            assert not rejected, rejected
            res = pool.ingest(good, rejected, now)
            orch = Orchestrator(settings.with_updates(**overrides), db, schema, "test-worker")
            key = (station, day.date().isoformat())
            out.inputs[key] = len(reports)
            for wid in sorted(res.windows):
                rid = orch.close_window(wid, "due", now + timedelta(minutes=1))
                if rid:
                    out.releases[key] = rid
                elif station == "H1":
                    out.held[key] = wid
                else:
                    out.carried[key] = wid
    return out
