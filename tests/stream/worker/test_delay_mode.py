"""Delay mode (CASTLE) against a real PostgreSQL ledger: every report leaves within delta (tuples and event
seconds) released once or counted suppressed, every class holds k persons and l offences (an outside pandas
check over the released labels), a restarted runner resumes from the ledger, and reports of one person in
overlapping clusters count once towards k."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import SecretStr
from sqlalchemy import select

import migrations
from db import Database, PoolRepository
from db.models import PendingReport, Release, ReleasedFingerprint, ReleaseRecords
from stream.config.delay import DelayPolicy
from stream.config.privacy import StreamPrivacy
from stream.config.settings import Settings
from stream.io.specs import crime_spec_without_dp, load_schema
from stream.testing.reports import day_of_reports, ingest_reports
from stream.testing.services import PostgresServer
from stream.worker.delay import DelayRunner
from stream.worker.release import window_policy

pytestmark = [pytest.mark.postgres]
KEY = "delay-mode-test-key"


def _setup(pg: Any, tmp_path: Any, name: str, **extra: Any) -> tuple[Settings, Database, PoolRepository]:
    url = pg.create_database(name)
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec=crime_spec_without_dp(tmp_path / "spec"),
                        privacy=StreamPrivacy(k=4), fingerprint_key=SecretStr(KEY),
                        delay=DelayPolicy(enabled=True, seconds=3600.0, tuples=60), **extra)
    db = Database(url)
    return settings, db, PoolRepository(db, window_policy(settings))


def _outcome(db: Database) -> tuple[dict[str, str], list[dict[str, Any]], pd.DataFrame]:
    with db.read() as s:
        states = {str(i): st for i, st in s.execute(select(PendingReport.id, PendingReport.state)).all()}
        manifests = list(s.execute(select(Release.manifest)).scalars())
        recs = [(r.columns, r.rows) for r in s.execute(select(ReleaseRecords)).scalars()]
        fps = list(s.execute(select(ReleasedFingerprint.fingerprint)).scalars())
    assert len(fps) == len(set(fps))
    frames = [pd.DataFrame(rows, columns=cols, dtype=object).assign(release=i)
              for i, (cols, rows) in enumerate(recs) if rows]
    return states, manifests, pd.concat(frames) if frames else pd.DataFrame()


def test_every_report_leaves_within_delta_released_once_or_counted(pg: PostgresServer, tmp_path: Path) -> None:
    settings, db, pool = _setup(pg, tmp_path, "delay1")
    schema = load_schema(settings.spec)
    reports = day_of_reports(2, 150, seed=11)
    start = datetime(2030, 1, 1, tzinfo=UTC)
    runner = DelayRunner(settings, db, schema, "w1")
    pushed = 0
    for i, chunk in enumerate([r for rs in reports.values() for r in rs][j:j + 40] for j in range(0, 300, 40)):
        ingest_reports(settings, pool, chunk, start + timedelta(seconds=i), KEY.encode())
        pushed += len(chunk)
        if i == 3:  # the worker is killed: a fresh runner (and owner) resumes from the ledger
            with db.unit() as s:
                from db.models import Window
                s.execute(Window.__table__.update().where(Window.id.like("castle:%"), Window.state == "closing")
                          .values(lease_until=start - timedelta(days=1)))
            runner = DelayRunner(settings, db, schema, "w2")
        runner.tick(start + timedelta(seconds=i))
    for h in range(1, 4):  # quiet keys: event time moves on with the wall clock, every report leaves
        runner.tick(start + timedelta(hours=h))
    states, manifests, released = _outcome(db)
    assert len(states) == pushed and set(states.values()) <= {"released", "suppressed"}
    n_rel = sum(m["counts"]["released"] for m in manifests)
    n_sup = sum(m["counts"]["suppressed"] for m in manifests)
    assert n_rel == sum(v == "released" for v in states.values()) == len(released)
    assert n_sup == sum(v == "suppressed" for v in states.values())
    for m in manifests:
        d = m["diagnostics"]["delay"]
        assert d["latency_tuples_max"] <= settings.delay.tuples
        assert d["latency_seconds_max"] <= settings.delay.seconds  # rounded to the millisecond: 14.9996 reads 15.0
        assert sum(d["suppressed"].values()) == m["counts"]["suppressed"]
    qis = [c for c in released.columns if c in schema.qi_names]
    per_class = released.groupby(["release", *qis])["offence"].nunique()
    assert (per_class >= 2).all()  # l = 2 (the stream's default)
    assert (released.groupby(["release", *qis]).size() >= settings.privacy.k).all()
    db.dispose()


def test_one_persons_reports_count_once_towards_k(pg: PostgresServer, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Several reports of one person (same name and date of birth) pushed close together: every published
    class holds k distinct persons (person fingerprints from the ledger), not merely k reports."""
    import stream.worker.delay as delay

    settings, db, pool = _setup(pg, tmp_path, "delay2")
    schema = load_schema(settings.spec)
    reports = day_of_reports(1, 240, seed=12)["S1"]
    for i, r in enumerate(reports):  # persons of 4 reports each, their reports interleaved with others'
        owner = reports[(i // 16) * 16 + i % 4]
        r["name"], r["dob"] = owner["name"], owner["dob"]
    groups: list[pd.DataFrame] = []
    real = delay.build_release

    def spy(*args: Any, **kw: Any) -> Any:
        rel = real(*args, **kw)
        groups.append(pd.DataFrame({"pool_id": [int(i) for i in rel.rows.index], "cls": rel.class_ids}))
        return rel

    monkeypatch.setattr(delay, "build_release", spy)
    start = datetime(2030, 1, 1, tzinfo=UTC)
    runner = DelayRunner(settings, db, schema, "w1")
    for j in range(0, len(reports), 30):
        ingest_reports(settings, pool, reports[j:j + 30], start + timedelta(seconds=j), KEY.encode())
        runner.tick(start + timedelta(seconds=j))
    runner.tick(start + timedelta(hours=2))
    with db.read() as s:
        person = {int(i): p for i, p, st in s.execute(select(PendingReport.id, PendingReport.person_fp,
                                                              PendingReport.state)).all() if st == "released"}
    assert len(set(person.values())) < len(person)  # persons with several released reports
    assert groups and sum(len(g) for g in groups) == len(person)
    for g in groups:
        persons = g.assign(person=g.pool_id.map(person)).groupby("cls")["person"].nunique()
        assert (persons >= settings.privacy.k).all()
    db.dispose()


@pytest.mark.parametrize(("values", "says"), [
    ({}, "differentially private counts"),
    ({"privacy": {"l": 2, "l_kind": "entropy"}}, "distinct l only"),
    ({"privacy": {"t": 0.3}}, "t-closeness"),
])
def test_delay_mode_refuses_at_start_up_in_one_line(tmp_path: Path, values: dict[str, Any], says: str) -> None:
    from core.errors import ParamsError
    from stream.worker.dpcounts import check_counts

    spec = "crime" if not values else crime_spec_without_dp(tmp_path)
    settings = Settings(spec=spec, data_dir=tmp_path, delay=DelayPolicy(enabled=True), **values)
    with pytest.raises(ParamsError) as err:
        check_counts(load_schema(settings.spec), settings)
    assert says in err.value.message and "\n" not in err.value.message
