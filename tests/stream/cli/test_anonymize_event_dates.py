"""``anonymize`` on a multi-day, unsorted export: every released row's ``event_date_lo`` /
``event_date_hi`` covers its report's day, and the report states the input's first and last day.

Oracle, from the input alone: for each source day, the released rows whose span covers that day
number at least the reports of that day (nothing is suppressed here), and the rows whose span is
that day alone at most them.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.generators import generate_crime_reports
from stream.analyst import day_counts
from stream.cli.main import main

ARRESTS = """
identifiers = ["report_id"]
time_column = "arrested"

[[qi]]
name = "arrested"
type = "date"
hierarchy = { levels = ["day", "month", "year"], format = "us" }

[[qi]]
name = "sex"
type = "categorical"
hierarchy = { rows = [["F", "*"], ["M", "*"]] }

[sensitive]
name = "offence"
severity = { "Theft" = 1, "Assault" = 2 }
"""


def _check_days(released: pd.DataFrame, days: pd.Series) -> None:
    """Per source day: rows covering it >= that day's reports >= rows dated that day alone."""
    assert released["event_date_lo"].notna().all() and (released["event_date_lo"] <= released["event_date_hi"]).all()
    truth = days.value_counts()
    assert truth.nunique() > 1  # uneven days: the oracle is not one number
    bounds = day_counts(released)  # the analyst's reader gives the same bounds
    for day, n in truth.items():
        covering = int(((released["event_date_lo"] <= day) & (day <= released["event_date_hi"])).sum())
        alone = int(((released["event_date_lo"] == day) & (released["event_date_hi"] == day)).sum())
        assert alone <= n <= covering, (day, alone, n, covering)
        assert tuple(bounds.loc[date.fromisoformat(day)]) == (alone, covering)


@pytest.mark.parametrize("engine", ["cg-kanon", "ils"])
def test_a_catch_up_export_is_dated_by_its_events(tmp_path: Path, engine: str) -> None:
    rng = np.random.default_rng(11)
    frame = generate_crime_reports(rng, stations=2, days=14, per_day=60)
    day = frame["event_time"].str.slice(0, 10)
    frame = frame[rng.random(len(frame)) < 0.3 + 0.05 * day.str.slice(8, 10).astype(int).to_numpy()]
    frame = frame.sample(frac=1.0, random_state=5)  # unsorted, as a records system exports it
    source = tmp_path / "export.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict("records")))
    out, report = tmp_path / "released.csv", tmp_path / "report.json"
    assert main(["anonymize", str(source), "--spec", "crime", "--engine", engine, "-k", "5",
                 "--max-suppression", "0", "--out", str(out), "--report", str(report)]) == 0
    released = pd.read_csv(out, dtype=str)
    assert len(released) == len(frame)
    days = frame["event_time"].str.slice(0, 10)
    _check_days(released, days)
    summary = json.loads(report.read_text())
    assert summary["event_time"] == {"first": days.min(), "last": days.max()}
    names = [c["name"] for c in summary["codebook"]["columns"]]
    assert names[-2:] == ["event_date_lo", "event_date_hi"] and names == list(released.columns)


def test_a_date_qi_dates_each_row_by_its_own_generalised_date(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    n = 400
    when = pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 120, n) ** 2 // 120, unit="D")
    pd.DataFrame({"report_id": [f"r{i}" for i in range(n)], "arrested": when.strftime("%m/%d/%Y"),
                  "sex": rng.choice(["F", "M"], n), "offence": rng.choice(["Theft", "Assault"], n)},
                 ).to_csv(tmp_path / "export.csv", index=False)
    (tmp_path / "spec.toml").write_text(ARRESTS)
    out, report = tmp_path / "released.csv", tmp_path / "report.json"
    assert main(["anonymize", str(tmp_path / "export.csv"), "--spec", str(tmp_path / "spec.toml"),
                 "--engine", "cg-kanon", "-k", "5", "--max-suppression", "0", "--out", str(out),
                 "--report", str(report)]) == 0
    released = pd.read_csv(out, dtype=str)
    dated = released["arrested"] != "*"
    assert dated.any()
    assert (released.loc[dated, "event_date_lo"] == released.loc[dated, "arrested_start"]).all()
    assert (released.loc[dated, "event_date_hi"] == released.loc[dated, "arrested_end"]).all()
    days = pd.Series(when.strftime("%Y-%m-%d"))
    _check_days(released, days)
    assert json.loads(report.read_text())["event_time"] == {"first": days.min(), "last": days.max()}
