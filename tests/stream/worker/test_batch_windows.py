"""Windows from a batch export: a multi-day export pushed shuffled, with co-offender rows, through
``anonstream push`` and a real worker (bundled broker, PostgreSQL, the bundled crime spec).

The worker closes each station's windows when the push's end marker says its batch is complete (the
windows' idle timeout is far away, and the shuffled rows move the watermark past every earlier day
at once), merges the windows the batch completed into releases worth publishing, never publishes
one below ``min_release_rows`` (default 10 k), and keeps what is too small pending until the next
push or an operator's ``windows flush``: released + pending = rows pushed, at every step.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from db.models import Batch, Release
from stream.cli.main import main
from stream.ops.broker import EmbeddedBroker
from stream.testing.reports import DAY, day_of_reports
from stream.testing.scenario import Scenario
from stream.testing.services import PostgresServer

pytestmark = [pytest.mark.postgres]

PER_DAY = [40, 3, 25, 60, 2, 15, 30, 10]  # reports per station and day: most days alone are too small


def export(stations: int, seed: int) -> list[dict[str, Any]]:
    """A multi-day export of ``stations`` stations with co-offender rows (the same event, time, place and
    offence, other people and report ids), shuffled as records systems export them."""
    rows: list[dict[str, Any]] = []
    for d, n in enumerate(PER_DAY):
        for station_rows in day_of_reports(stations, n, seed=seed + d, day=DAY + timedelta(days=d)).values():
            rows += station_rows
    co = [{**r, "report_id": f"{r['report_id']}-co", "name": f"{r['name']} Jr"} for r in rows[::7]]
    rows += co
    random.Random(seed).shuffle(rows)
    return rows


def push(sc: Scenario, rows: list[dict[str, Any]], path: Path) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = main(["push", str(path), "--broker", sc.settings.broker_url or "", "--topic", sc.settings.topic_reports])
    assert code == 0
    sc.pushed += len(rows)


def released_sizes(sc: Scenario) -> list[int]:
    with sc.db.read() as s:
        return sorted(s.execute(select(Release.released)).scalars())


@pytest.mark.slow
def test_a_shuffled_export_comes_out_in_releases_worth_publishing(kafka: EmbeddedBroker, pg: PostgresServer,
                                                                  tmp_path: Path) -> None:
    sc = Scenario(kafka, pg, tmp_path, idle_timeout_s=3600.0, max_suppression=0.0)
    floor = sc.settings.windows.release_floor(sc.settings.privacy.k)
    assert floor == 50  # the default: 10 k
    try:
        sc.start_worker()
        first = export(2, seed=61)
        push(sc, first, tmp_path / "export.jsonl")
        acc = sc.wait_settled(timeout=180)
        sizes = released_sizes(sc)
        assert sizes and min(sizes) >= floor, sizes
        assert acc["released"] + acc.get("pending", 0) == len(first) and acc.get("blocked", 0) == 0, acc
        assert acc.get("dlq", 0) == 0 and acc.get("pending", 0) == acc.get("carried", 0)
        with sc.db.read() as s:
            assert sorted(s.execute(select(Batch.station_id, Batch.rows).where(Batch.ended_at.is_not(None)))
                          .tuples()) == [(st, sum(r["station_id"] == st for r in first)) for st in ("S1", "S2")]

        # a few late rows fixed and pushed again: too few to publish, they wait (accounted as pending)
        late = [{**r, "report_id": f"{r['report_id']}-late"} for r in day_of_reports(1, 7, 62, DAY)["S1"]]
        push(sc, late, tmp_path / "late.jsonl")
        sc.wait_for(lambda: sc.accounting().get("carried", 0) == acc.get("carried", 0) + len(late), timeout=120)
        acc = sc.wait_settled(timeout=60)
        assert released_sizes(sc) == sizes
        assert acc["released"] + acc.get("pending", 0) == sc.pushed, acc

        # the operator flushes S1: its waiting reports are released now (at least k of them)
        assert main(["windows", "flush", "--station", "S1", "--database", sc.settings.db_url()]) == 0
        sc.wait_for(lambda: len(released_sizes(sc)) > len(sizes), timeout=60)
        acc = sc.wait_settled(timeout=60)
        pending = acc.get("pending", 0)
        assert acc["released"] + pending == sc.pushed and pending == acc.get("carried", 0), acc
        assert sum(released_sizes(sc)) - sum(sizes) >= len(late)
        _asm, complete = sc.releases()
        assert len(complete) == len(released_sizes(sc))
    finally:
        sc.close()
