"""One station, one key: ``08``, `` 8 `` and ``8`` are station 8 in the pool, its windows, the ledger,
the registry and the budget blocks built from its windows (review of issue 39: the same reports were
counted under two privacy budgets, two pools and two window series when two exports spelled the
station differently). Report ids alike: ``0042`` is report ``42``.

The intake path is the worker's (:func:`stream.intake.validate.screen_batch`, raw JSON messages), the
ledger a real PostgreSQL.
"""

from __future__ import annotations

import json
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from sqlalchemy import func, select

import migrations
from core.dp.blocks import declared_blocks
from db import Database, PoolRepository
from db.batches import begin, end
from db.models import Batch, Counter, PendingReport, Station, StationControl, Window
from db.windows import WindowPolicy
from stream.config.settings import Settings
from stream.intake.guards import station_ids, valid_station_id
from stream.intake.validate import Clean, ReportValidator, screen_batch, to_incoming
from stream.io.specs import load_schema
from stream.testing.reports import DAY, day_of_reports, spec_ref
from stream.testing.services import PostgresServer
from stream.wire.markers import Marker
from stream.worker.batches import MarkerIntake
from stream.worker.release import window_policy

KEY = b"canonical-ids-test-key-0123456789abcdef"
SPELLINGS = ("08", " 8 ", "8", "008", 8)  # one station as several exports write it
CFG = Settings(spec=spec_ref(), fingerprint_key=SecretStr(KEY.decode()))


def _spaced(n: int, zeros: int, left: str, right: str) -> str:
    return f"{left}{'0' * zeros}{n}{right}"


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=10**6), st.integers(0, 4), st.sampled_from(["", " ", "  "]),
       st.sampled_from(["", " ", "\t"]), st.integers(min_value=0, max_value=10**9), st.integers(0, 3))
def test_every_spelling_of_a_station_and_report_id_gives_one_fingerprint_and_window(
        validator: ReportValidator, good: dict, station: int, zeros: int, left: str, right: str, report: int,
        rzeros: int) -> None:
    cfg = CFG
    plain = validator.check(good | {"station_id": str(station), "report_id": str(report)})
    spelled = validator.check(good | {"station_id": _spaced(station, zeros, left, right),
                                      "report_id": _spaced(report, rzeros, right, left)})
    assert isinstance(plain, Clean) and isinstance(spelled, Clean)
    assert (spelled.station_id, spelled.report_id) == (plain.station_id, plain.report_id) == (str(station),
                                                                                             str(report))
    a = to_incoming(plain, KEY, cfg.window_key_for(plain.station_id), False)
    b = to_incoming(spelled, KEY, cfg.window_key_for(spelled.station_id), False)
    assert (a.fingerprint, a.window_key, a.station_id) == (b.fingerprint, b.window_key, b.station_id)
    assert a.window_key == f"station:{station}"


def test_ids_that_are_not_digits_only_keep_their_zeros_and_case(validator: ReportValidator, good: dict) -> None:
    for raw, canon in (("S08", "S08"), (" s08 ", "s08"), ("08a", "08a"), ("0.8", "0.8")):
        clean = validator.check(good | {"station_id": raw, "report_id": f" R-{raw.strip()} "})
        assert isinstance(clean, Clean) and clean.station_id == canon and clean.report_id == f"R-{raw.strip()}"
    assert valid_station_id("S08") != valid_station_id("S8")


def test_station_ids_named_from_outside_are_canonical_each_once() -> None:
    assert station_ids(["08", " 8", "8", "S1", "bad id"]) == (["8", "S1"], ["bad id"])
    assert Settings(spec=spec_ref(), windows=WindowPolicy(by="region"),
                    regions={"08": "north"}).window_key_for("8") == \
        "region:north"


def _db(pg: Any, name: str) -> tuple[Database, str]:
    url = pg.create_database(name)
    migrations.upgrade(url)
    return Database(url), url


def _messages(rows: list[dict[str, Any]]) -> list[bytes | str | None]:
    return [json.dumps(r).encode() for r in rows]


@pytest.mark.postgres
def test_two_spellings_of_a_station_share_one_pool_window_series_ledger_and_budget_block(
        pg: PostgresServer, tmp_path: Path) -> None:
    db, url = _db(pg, "canon")
    cfg = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(), fingerprint_key=SecretStr(KEY.decode()))
    schema = load_schema(cfg.spec)
    pool = PoolRepository(db, window_policy(cfg), "first-sight")
    validator = ReportValidator(schema, cfg.person_columns)
    rows = day_of_reports(1, 40, seed=39)["S1"]
    for i, r in enumerate(rows):  # 40 reports of one station, spelled five ways, ids zero-padded or not
        r["station_id"] = SPELLINGS[i % len(SPELLINGS)]
        r["report_id"] = f"{i + 1:04d}" if i % 2 else str(i + 1)
    again = [r | {"station_id": "8", "report_id": str(int(str(r["report_id"])))} for r in rows[:6]]
    try:
        now = DAY + timedelta(hours=23)
        first = screen_batch(validator, _messages(rows), KEY, cfg.window_key_for, False, now)
        assert not first.rejections and len(first.accepted) == 40
        got = pool.ingest(first.accepted, first.rejections, now)
        assert got.accepted == 40 and got.refused == []
        # the same reports again from an export that writes `8` and `7` (not `08`, `0007`): duplicates
        resent = screen_batch(validator, _messages(again), KEY, cfg.window_key_for, False, now)
        got = pool.ingest(resent.accepted, resent.rejections, now)
        assert (got.accepted, got.duplicates) == (0, len(again))
        with db.read() as s:
            pooled = s.execute(select(PendingReport.station_id, PendingReport.window_key, func.count())
                               .group_by(PendingReport.station_id, PendingReport.window_key)).all()
            keys = set(s.execute(select(Window.key)).scalars())
            windows = s.execute(select(Window)).scalars().all()
            registered = set(s.execute(select(Station.station_id)).scalars())
            dups = s.execute(select(Counter.station_id, Counter.count).where(Counter.kind == "duplicate")).all()
        assert [tuple(p) for p in pooled] == [("8", "station:8", 40)]  # one pool
        assert keys == {"station:8"} and sum(w.count for w in windows) == 40  # one window series
        assert registered == {"8"} and [tuple(d) for d in dups] == [("8", len(again))]  # one ledger entry
        days = sorted({w.start.astimezone(UTC).date().isoformat() for w in windows})
        # the budget blocks the worker charges are declared by the windows: one per day for station 8
        assert declared_blocks("station-day", keys=sorted(keys), days=days) == [f"station:8/day:{d}" for d in days]
    finally:
        db.dispose()


@pytest.mark.postgres
def test_the_registry_markers_and_controls_take_any_spelling_of_a_station(pg: PostgresServer, tmp_path: Path) -> None:
    from stream.console.controls import register_stations, set_paused

    db, url = _db(pg, "canonreg")
    cfg = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(), fingerprint_key=SecretStr(KEY.decode()))
    try:
        added = register_stations(db, "08, 8 007", "operator")
        assert added == {"added": ["8", "7"], "already_registered": []}
        assert register_stations(db, "0008", "operator") == {"added": [], "already_registered": ["8"]}
        pool = PoolRepository(db, window_policy(cfg), "registered")
        validator = ReportValidator(load_schema(cfg.spec), cfg.person_columns)
        rows = [r | {"station_id": st, "report_id": f"r{i}"}
                for i, (r, st) in enumerate(zip(day_of_reports(1, 4, seed=40)["S1"], ("8", "08", " 7", "9"),
                                                strict=True))]
        now = DAY + timedelta(hours=23)
        batch = screen_batch(validator, _messages(rows), KEY, cfg.window_key_for, False, now)
        got = pool.ingest(batch.accepted, batch.rejections, now)
        assert got.accepted == 3 and [r for _i, r, _m in got.refused] == ["unknown-station"]  # only station 9
        # a push's markers spelled `08` and `8` are one batch of station 8
        intake = MarkerIntake(db, cfg.feed, cfg.window_key_for)
        _reports, begins, ends, _bad = intake.split([Marker("begin", "b-1", "08").encode(),
                                                     Marker("end", "b-1", "8", 2).encode()])
        assert [(m.station, m.key) for m in begins + ends] == [("8", "station:8"), ("8", "station:8")]
        begin(db, cfg.feed, begins, now)
        end(db, cfg.feed, ends, now)
        set_paused(db, " 08", True, "operator")
        with db.read() as s:
            assert set(s.execute(select(Station.station_id)).scalars()) == {"7", "8"}
            assert list(s.execute(select(StationControl.station_id)).scalars()) == ["8"]
            batches = s.execute(select(Batch.station_id, Batch.rows, Batch.ended_at.is_not(None))).all()
        assert [tuple(b) for b in batches] == [("8", 2, True)]  # begun as `08`, ended as `8`: one batch, complete
    finally:
        db.dispose()

