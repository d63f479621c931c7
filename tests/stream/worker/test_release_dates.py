"""A catch-up push dated by its events: ten days of two stations, uneven and shuffled, in one
``anonstream push`` through a real worker (bundled broker, PostgreSQL, the bundled crime spec).

The worker merges the windows the push completed into one release per station. Each released row's
``event_date_lo`` / ``event_date_hi`` must cover its report's day (never the last window's day), and
each signed manifest's ``window`` and ``event_time`` must state the first and last day of the events
it released. The oracle comes from the input: each report's day, and the release the ledger's pool
row of its keyed fingerprint names.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from db.models import PendingReport
from stream.cli.main import main
from stream.intake.fingerprints import fingerprint
from stream.ops.broker import EmbeddedBroker
from stream.testing.reports import DAY, day_of_reports
from stream.testing.scenario import Scenario
from stream.testing.services import PostgresServer

pytestmark = [pytest.mark.postgres]

PER_DAY = [30, 4, 55, 12, 0, 41, 7, 26, 60, 18]  # reports per station and day (day 5: none)


def export(seed: int) -> list[dict[str, Any]]:
    """Two stations' reports over ten days, shuffled as one file."""
    rows: list[dict[str, Any]] = []
    for d, n in enumerate(PER_DAY):
        if n:
            for station_rows in day_of_reports(2, n, seed=seed + d, day=DAY + timedelta(days=d)).values():
                rows += station_rows
    random.Random(seed).shuffle(rows)
    return rows


@pytest.mark.slow
def test_a_multi_day_push_is_dated_by_its_events(kafka: EmbeddedBroker, pg: PostgresServer, tmp_path: Path) -> None:
    sc = Scenario(kafka, pg, tmp_path, idle_timeout_s=3600.0, max_suppression=0.0)
    rows = export(seed=81)
    day_of = {(r["station_id"], r["report_id"]): str(r["event_time"])[:10] for r in rows}
    try:
        sc.start_worker()
        source = tmp_path / "export.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in rows))
        assert main(["push", str(source), "--broker", sc.settings.broker_url or "",
                     "--topic", sc.settings.topic_reports]) == 0
        sc.pushed += len(rows)
        acc = sc.wait_settled(timeout=180)
        assert acc["released"] == len(rows) and acc.get("pending", 0) == 0, acc
        _asm, releases = sc.releases()
        key = sc.settings.key_bytes()
        with sc.db.read() as s:
            release_of = {fp: rid for fp, rid in s.execute(select(PendingReport.fingerprint, PendingReport.release_id))}
    finally:
        sc.close()

    by_release: dict[str, Counter[str]] = {}  # the oracle: per release, its reports per source day
    for (station, report_id), day in day_of.items():
        rid = release_of[fingerprint(key, station, report_id)]
        by_release.setdefault(rid, Counter())[day] += 1
    assert {m["release_id"] for m, _ in releases} == set(by_release)
    assert sum(m["records"] for m, _ in releases) == len(rows)
    for manifest, records in releases:
        truth = by_release[manifest["release_id"]]
        first, last = min(truth), max(truth)
        assert first < last  # a catch-up: one release spans several days
        assert manifest["event_time"] == {"first": first, "last": last}
        window = manifest["window"]
        assert (window["first_day"], window["last_day"]) == (first, last)
        after = (date.fromisoformat(last) + timedelta(days=1)).isoformat()
        assert window["start"][:10] == first and window["end"][:10] == after  # the midnights bounding them
        spans = [(r["values"]["event_date_lo"], r["values"]["event_date_hi"]) for r in records]
        assert all(first <= lo <= hi <= last for lo, hi in spans)
        for day, n in truth.items():  # rows whose span covers a day number at least that day's reports
            covering = sum(lo <= day <= hi for lo, hi in spans)
            alone = sum(lo == hi == day for lo, hi in spans)
            assert alone <= n <= covering, (manifest["release_id"], day, alone, n, covering)
