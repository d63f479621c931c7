"""Receipts lost with a broker: on the worker's machine push asks the ledger which unconfirmed reports it
holds exactly as sent (same keyed fingerprint and content), reading the file again in bounded memory."""

from __future__ import annotations

from array import array
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from pydantic import SecretStr

import migrations
from db import Database, PoolRepository
from stream.config.settings import Settings
from stream.io.specs import load_schema
from stream.station.receipt import found_in_ledger
from stream.testing.reports import day_of_reports, ingest_reports, spec_ref
from stream.testing.services import PostgresServer
from stream.worker.release import window_policy

pytestmark = [pytest.mark.postgres]
KEY = "receipt-ledger-key"


def test_the_ledger_confirms_the_reports_it_holds_as_sent(pg: PostgresServer, tmp_path: Path) -> None:
    url = pg.create_database("receiptledger")
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(), fingerprint_key=SecretStr(KEY))
    db = Database(url)
    try:
        rows = day_of_reports(1, 40, seed=14)["S1"]
        path = tmp_path / "reports.csv"
        frame = pd.DataFrame(rows).drop(columns=["station_id"]).astype(str)  # pushed with --station S1
        frame.insert(3, "note", "")
        frame.loc[[5, 6], "age"] = "abc"  # two rows push rejected: they have no number
        frame.to_csv(path, index=False)
        lines = array("I", [n + 2 for n in range(40) if n not in (5, 6)])  # header = line 1
        held = [r for n, r in enumerate(rows) if n % 3 == 0 and n not in (5, 6)]
        changed = {**rows[9], "offence": "Fraud" if rows[9]["offence"] != "Fraud" else "Theft"}  # another version
        pool = PoolRepository(db, window_policy(settings))
        ingest_reports(settings, pool, [r for r in held if r is not rows[9]] + [changed],
                       datetime(2030, 1, 1, tzinfo=UTC), KEY.encode())
        ledger = SimpleNamespace(db=db, key=KEY.encode(), settings=settings)
        number = {line - 2: k for k, line in enumerate(lines)}  # row index -> report number
        unconfirmed = list(range(len(lines)))
        found = found_in_ledger(ledger, str(path), load_schema(spec_ref()), "S1", lines, unconfirmed, chunk=4)
        expected = sorted(number[n] for n, r in enumerate(rows) if r in held and n != 9)
        assert sorted(found) == expected and len(expected) == 12
        # only the numbers asked about are looked up
        assert found_in_ledger(ledger, str(path), load_schema(spec_ref()), "S1", lines, expected[:3]) == expected[:3]
    finally:
        db.dispose()
