"""Issue 42: the period sign-off covers a multi-day demo. ``anonstream demo --days 3`` pushes three daily
batches, each once the last is released; ``releases report --since --until`` over those days then accounts
for every generated report, one release per station and day, and the budget spent on each station-day."""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytestmark = [pytest.mark.broker, pytest.mark.slow]

STATIONS, REPORTS, SEED, DAY, DAYS = 2, 200, 11, "2024-05-30", 3


def generated() -> Counter[tuple[str, str]]:
    """(station, day) -> reports, from the demo's generator alone (one seed per day, as the demo draws them)."""
    from stream.station.simulate import generate_day

    first = datetime.fromisoformat(DAY).replace(tzinfo=UTC)
    out: Counter[tuple[str, str]] = Counter()
    for i in range(DAYS):
        for station, rows in generate_day(STATIONS, REPORTS, SEED + i, first + timedelta(days=i)).items():
            for r in rows:
                out[(station, str(r["event_time"])[:10])] += 1
    return out


def test_a_three_day_demo_signs_off_as_one_period(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from stream.cli.main import main
    from stream.testing.reports import spec_ref

    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("ANONSTREAM_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ANONSTREAM_SPEC", spec_ref())
    expected = generated()
    days = sorted({d for _s, d in expected})
    assert len(days) == DAYS  # the generator keeps each day's reports on that day (the oracle's premise)

    code = main(["demo", "--stations", str(STATIONS), "--reports", str(REPORTS), "--seed", str(SEED),
                 "--day", DAY, "--days", str(DAYS), "--timeout", "300", "--format", "csv",
                 "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"releases report --since {days[0]} --until {days[-1]}" in out  # the hint names the period

    monkeypatch.setenv("ANONSTREAM_HOME", str(tmp_path / "var" / "demo"))
    assert main(["releases", "report", "--since", days[0], "--until", days[-1], "--out", "period.json"]) == 0
    report = json.loads((tmp_path / "period.json").read_text())
    totals = report["totals"]
    assert totals["received"] == totals["released"] + totals["suppressed"] + totals["held_back"] == sum(
        expected.values())
    assert totals["releases"] == totals["requirements_met"] == len(expected)
    assert totals["held_windows"] == 0 and sorted(totals["stations"]) == [f"S{i + 1}" for i in range(STATIONS)]
    per_window = {(r["stations"][0], r["day"]): r["received"] for r in report["releases"]}
    assert per_window == dict(expected)  # one release per station and day, each with that day's reports
    spent = {b["block"] for b in report["budget"]}
    assert spent == {f"station:{s}/day:{d}" for s, d in expected}

    assert main(["releases", "report", "--since", days[1], "--until", days[1], "--out", "one-day.json"]) == 0
    one = json.loads((tmp_path / "one-day.json").read_text())
    assert one["totals"]["received"] == sum(n for (_s, d), n in expected.items() if d == days[1])
