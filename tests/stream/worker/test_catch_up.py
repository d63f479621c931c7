"""A station's catch-up export (17 months in one file) is accepted in one push, through ``anonstream push``
and a real worker; a flood of invented windows from a station seen for the first time is still refused.

Before, the window-rate guard (``windows.max_new_windows_per_hour``) dead-lettered every report past
the key's hourly number of new windows, so a registered station's history of more event days than that
lost reports as ``window-rate``. Now the windows of a push of a station an operator registered before
the push count against the push (``windows.max_backfill_windows``), db/windows.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import func, select

from core.generators import generate_crime_reports
from db.models import Counter, Window
from db.stations import StationRegistry
from stream.cli.main import main
from stream.ops.broker import EmbeddedBroker
from stream.station.advert import live, read_adverts
from stream.testing.scenario import Scenario
from stream.testing.services import PostgresServer

pytestmark = [pytest.mark.postgres, pytest.mark.broker, pytest.mark.slow]

HOURLY = 100  # windows a key may open per hour outside a catch-up (the default is 500; the rule is the same)


def _export(path: Path, prefix: str, start: str, days: int, seed: int) -> list[dict[str, object]]:
    """One report per event day of one station (``{prefix}1``), shuffled as an export may be."""
    df = generate_crime_reports(np.random.default_rng(seed), stations=1, days=days, per_day=1, start=start,
                                prefix=prefix)
    rows = df.sample(frac=1.0, random_state=seed).to_dict("records")
    path.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    return rows


def _push(sc: Scenario, path: Path) -> int:
    """``anonstream push``, once the worker advertises itself (so push waits for its receipt)."""
    sc.wait_for(lambda: bool(live(read_adverts(sc.settings.bootstrap_servers(), sc.settings.topic_reports))),
                timeout=120)
    return main(["push", str(path), "--broker", sc.settings.broker_url or "", "--topic", sc.settings.topic_reports,
                 "--wait", "180"])


def _windows(sc: Scenario, key_part: str) -> int:
    with sc.db.read() as s:
        return int(s.execute(select(func.count()).select_from(Window).where(Window.key.contains(key_part)))
                   .scalar_one())


def test_a_registered_stations_17_months_are_accepted_and_a_first_sight_flood_is_not(kafka: EmbeddedBroker,
        pg: PostgresServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sc = Scenario(kafka, pg, tmp_path, register_stations="first-sight", max_new_windows_per_hour=HOURLY,
                  idle_timeout_s=3600.0, max_suppression=0.0)
    try:
        StationRegistry(sc.db).add(["S1"], "test", datetime.now(UTC))  # an operator registered the station
        sc.start_worker()
        history = _export(tmp_path / "history.jsonl", "S", "2023-01-01", 517, seed=3)  # 17 months: 517 days
        days = {str(r["event_time"])[:10] for r in history}
        assert len(days) == 517 > HOURLY
        assert _push(sc, tmp_path / "history.jsonl") == 0, capsys.readouterr().out  # the receipt: all accepted
        assert f"receipt: {len(history)} of {len(history)} report(s) accepted" in capsys.readouterr().out
        sc.pushed += len(history)
        acc = sc.wait_settled(timeout=240)
        assert acc.get("dlq", 0) == 0, acc
        assert acc["released"] + acc.get("pending", 0) + acc.get("suppressed", 0) == len(history), acc
        assert _windows(sc, "S1") >= len(days)  # one window per event day, all opened in one push

        # a station never registered by an operator inventing event days: the hourly bound holds
        flood = _export(tmp_path / "flood.jsonl", "F", "2023-06-01", HOURLY + 40, seed=4)
        assert _push(sc, tmp_path / "flood.jsonl") == 1  # not all accepted
        sc.pushed += len(flood)
        out = capsys.readouterr().out
        assert "receipt: 40 dead-lettered" in out and "40 x window-rate" in out, out
        with sc.db.read() as s:
            refused = s.execute(select(func.sum(Counter.count)).where(Counter.reason == "window-rate")).scalar_one()
        assert refused == 40
        assert _windows(sc, "F1") == HOURLY
    finally:
        sc.close()
