"""A real ledger for the console tests, built through the stream's own service functions.

Reports come from the crime generator (``stream.station.simulate.generate_day``), are validated and stripped
of identifiers by ``stream.intake.validate``, written to the pending pool by ``db.PoolRepository`` and turned
into releases by ``stream.worker.release.Orchestrator`` - exactly the worker's path minus the broker:

* stations S1-S3 (mondrian, k=5): one release each;
* station P1 (pbg-ea, a short search): a release with a Pareto front;
* station T1 (3 reports < k): a ``carried`` window with pending reports;
* station H1 (an engine parameter the engine rejects): a ``held`` window;
* a few malformed reports: DLQ events and counters.

``identifiers`` collects every report id, name and date of birth of the input, and every report
fingerprint, for the no-leak test.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from db.windows import WindowPolicy
from stream.config.privacy import StreamPrivacy

DAY = datetime(2024, 3, 1, tzinfo=UTC)
TOKEN = "console-test-token-7f3a"


@dataclass
class Seeded:
    settings: Any
    db: Any
    releases: dict[str, str] = field(default_factory=dict)  # station -> release id
    held_window: str = ""
    carried_window: str = ""
    identifiers: set[str] = field(default_factory=set)
    rejected: dict[str, int] = field(default_factory=dict)


def _validate(settings: Any, schema: Any, reports: list[dict[str, Any]],
              bad: Sequence[bytes] = ()) -> tuple[list, list]:
    from db import Rejection
    from stream.intake.validate import Clean, ReportValidator, to_incoming

    v = ReportValidator(schema, settings.person_columns)
    good, rejected = [], []
    for raw in [json.dumps(r).encode() for r in reports] + list(bad):
        res = v.check(raw)
        if isinstance(res, Clean):
            good.append(to_incoming(res, settings.key_bytes(), settings.window_key_for(res.station_id), True))
        else:
            rejected.append(Rejection(res.station_id or "unknown", res.reason, res.message))
    return good, rejected


def build(url: str, data_dir: Path, pbg: bool = True) -> Seeded:
    import migrations
    from db import Database, PoolRepository
    from stream.config.settings import Settings
    from stream.io.specs import load_schema
    from stream.station.simulate import bad_reports, generate_day
    from stream.worker.release import Orchestrator, window_policy

    settings = Settings(data_dir=data_dir, database_url=url, spec="crime", engine="mondrian",
                        privacy=StreamPrivacy(k=5),
                        operator_token=SecretStr(TOKEN), fingerprint_key=SecretStr("console-test-key"),
                        # small windows released (or held), not carried
                        windows=WindowPolicy(min_release_rows=1, idle_timeout_s=60))
    migrations.upgrade(url)
    db = Database(url)
    schema = load_schema(settings.spec)
    pool = PoolRepository(db, window_policy(settings))
    seeded = Seeded(settings, db)
    now = datetime.now(UTC) - timedelta(minutes=10)
    later = now + timedelta(minutes=5)

    groups: dict[str, tuple[Any, dict[str, Any]]] = {  # station -> (reports, settings overrides)
        **{st: (rs, {}) for st, rs in generate_day(3, 120, 11, DAY).items()},
        **({st: (rs, {"engine": "pbg-ea", "engine_params": {"population": 6, "iterations": 3}})
            for st, rs in generate_day(1, 120, 12, DAY, prefix="P").items()} if pbg else {}),
        **{st: (rs[:3], {}) for st, rs in generate_day(1, 10, 13, DAY, prefix="T").items()},
        **{st: (rs, {"engine_params": {"no_such_parameter": 1}}) for st, rs in generate_day(1, 40, 14, DAY,
                                                                                            prefix="H").items()},
    }
    bad = bad_reports("S1", groups["S1"][0][0])
    seeded.identifiers.update(f"S1-bad-{i}" for i in range(3))  # the report ids bad_reports() uses
    for station, (reports, overrides) in groups.items():
        for r in reports:
            seeded.identifiers.update(str(r[c]) for c in ("report_id", "name", "dob"))
        good, rejected = _validate(settings, schema, reports, bad if station == "S1" else [])
        for rej in rejected:
            seeded.rejected[rej.reason] = seeded.rejected.get(rej.reason, 0) + 1
        res = pool.ingest(good, rejected, now)
        local = settings.with_updates(**overrides) if overrides else settings
        orch = Orchestrator(local, db, schema, "test-worker")
        for wid in sorted(res.windows):
            rid = orch.close_window(wid, "due", later)
            if rid:
                seeded.releases[station] = rid
            elif station.startswith("H"):
                seeded.held_window = wid
            elif station.startswith("T"):
                seeded.carried_window = wid
    from sqlalchemy import select

    from db.models import PendingReport

    with db.unit() as s:
        seeded.identifiers.update(s.execute(select(PendingReport.fingerprint)).scalars())
    return seeded


def make_held(seeded: Seeded, station: str, n: int = 12, seed: int = 99) -> str:
    """A fresh ``held`` window for ``station`` (its engine rejects a parameter), for control tests."""
    from db import PoolRepository
    from stream.io.specs import load_schema
    from stream.station.simulate import generate_day
    from stream.worker.release import Orchestrator, window_policy

    settings = seeded.settings
    schema = load_schema(settings.spec)
    reports = next(iter(generate_day(1, n, seed, DAY, prefix=station).values()))
    for r in reports:
        seeded.identifiers.update(str(r[c]) for c in ("report_id", "name", "dob"))
    good, rejected = _validate(settings, schema, reports)
    now = datetime.now(UTC) - timedelta(minutes=1)
    res = PoolRepository(seeded.db, window_policy(settings)).ingest(good, rejected, now)
    orch = Orchestrator(settings.with_updates(engine_params={"no_such_parameter": 1}), seeded.db, schema, "test-worker")
    (wid,) = res.windows
    assert orch.close_window(wid, "due", datetime.now(UTC)) is None
    return wid
