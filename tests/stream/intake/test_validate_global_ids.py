"""Department-wide report ids (``id_scope = "global"``): the report fingerprint keys on the id alone, so
the same id from two stations is one report in the ledger; per station (the default) it is two."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import SecretStr
from sqlalchemy import func, select

import migrations
from db import Database, PoolRepository
from db.models import PendingReport
from stream.config.settings import Settings
from stream.intake.validate import Clean, ReportValidator, to_incoming
from stream.io.specs import load_schema, resolve_spec_path
from stream.testing.reports import day_of_reports, ingest_reports, spec_ref
from stream.testing.services import PostgresServer
from stream.worker.release import window_policy

KEY = b"global-ids-key"


@pytest.fixture(scope="module")
def global_spec(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("spec") / "crime-global.toml"
    text = resolve_spec_path(spec_ref()).read_text()
    path.write_text(text.replace('id_column = "report_id"', 'id_column = "report_id"\nid_scope = "global"'))
    return str(path)


def _twins() -> list[dict[str, object]]:
    """One report, and the same arrest key sent by another precinct (another event time: a reused id)."""
    first, second = day_of_reports(1, 2, seed=12)["S1"]
    return [first, second | {"station_id": "S2", "report_id": first["report_id"]}]


def test_the_report_fingerprint_ignores_the_station_only_for_global_ids(global_spec: str) -> None:
    for spec, same in ((spec_ref(), False), (global_spec, True)):
        validator = ReportValidator(load_schema(spec))
        cleans = [validator.check(dict(r)) for r in _twins()]
        assert all(isinstance(c, Clean) for c in cleans)
        fps = {to_incoming(c, KEY, f"station:{c.station_id}", False).fingerprint for c in cleans
               if isinstance(c, Clean)}
        assert (len(fps) == 1) is same


@pytest.mark.postgres
def test_the_ledger_refuses_a_department_wide_id_sent_again_by_another_station(pg: PostgresServer, tmp_path: Path,
                                                                               global_spec: str) -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    for spec, held in ((spec_ref(), 2), (global_spec, 1)):
        url = pg.create_database("globalids")
        migrations.upgrade(url)
        settings = Settings(database_url=url, data_dir=tmp_path, spec=spec, fingerprint_key=SecretStr(KEY.decode()))
        db = Database(url)
        try:
            pool = PoolRepository(db, window_policy(settings))
            validator = ReportValidator(load_schema(spec))
            first, second = _twins()
            ingest_reports(settings, pool, [first], now, KEY, validator=validator)
            res = ingest_reports(settings, pool, [second], now, KEY, validator=validator)
            with db.read() as s:
                assert s.execute(select(func.count()).select_from(PendingReport)).scalar_one() == held
            assert [reason for _i, reason, _m in res.refused] == ([] if held == 2 else ["report-id-reused"])
        finally:
            db.dispose()
