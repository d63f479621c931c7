"""The event dates a released row carries (core/columns/dates.py), against oracles from the input.

A row's ``event_date_lo`` / ``event_date_hi`` must cover its own event day; every row of an equivalence
class (rows sharing every QI label) carries the same span, the class's first and last day when it has
at least k rows, else the release's; with the time column as a date QI, the span is the label's period.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.columns import event_date_spans, event_days
from core.columns.dates import date_qi
from core.encoding import Schema
from core.engines.registry import run
from core.generators import generate_crime_reports
from core.schema import parse_spec
from stream.io.specs import load_schema

K = 5


@pytest.fixture(scope="module")
def reports() -> pd.DataFrame:
    """Nine days of one station, thinned unevenly per day and shuffled (an unsorted catch-up export)."""
    rng = np.random.default_rng(7)
    df = generate_crime_reports(rng, days=9, per_day=120)
    keep = rng.random(len(df)) < df["event_time"].str.slice(8, 10).astype(int).map(lambda d: 0.2 + 0.08 * d)
    return df[keep.to_numpy()].sample(frac=1.0, random_state=3).reset_index(drop=True)


def _spans(df: pd.DataFrame, schema: Schema, engine: str) -> tuple[pd.DataFrame, np.ndarray]:
    release = run(engine, df, schema, {"k": K}, seed=1)
    rows = release.rows
    days = event_days(df.loc[rows.index, "event_time"])
    lo, hi = event_date_spans(rows, days, schema, K)
    out = pd.DataFrame({"lo": lo, "hi": hi, "day": days.astype(str)}, index=rows.index)
    return pd.concat([rows[schema.qi_names], out], axis=1), days


@pytest.mark.parametrize("engine", ["cg-kanon", "mondrian", "ils", "optimal"])
def test_each_class_carries_the_span_of_its_own_events(reports: pd.DataFrame, engine: str) -> None:
    schema = load_schema("crime")
    assert date_qi(schema) is None  # the crime spec's event time is no QI
    table, days = _spans(reports, schema, engine)
    assert ((table["lo"] <= table["day"]) & (table["day"] <= table["hi"])).all()  # covers the row's own day
    first, last = str(days.min()), str(days.max())
    for _labels, group in table.groupby(schema.qi_names, sort=False):
        assert group["lo"].nunique() == 1 and group["hi"].nunique() == 1  # the span splits no class
        if len(group) >= K:  # the oracle: the class's own first and last event day
            assert (group["lo"].iloc[0], group["hi"].iloc[0]) == (group["day"].min(), group["day"].max())
        else:  # a label group below k (k-regular releases): the release's span, nothing finer
            assert (group["lo"].iloc[0], group["hi"].iloc[0]) == (first, last)


def test_rows_whose_span_covers_a_day_bound_that_days_reports(reports: pd.DataFrame) -> None:
    schema = load_schema("crime")
    table, _days = _spans(reports, schema, "cg-kanon")
    truth = reports.loc[table.index, "event_time"].str.slice(0, 10).value_counts()
    assert truth.nunique() > 1  # uneven days, so the oracle is not one number
    for day, n in truth.items():
        exact = int(((table["lo"] == day) & (table["hi"] == day)).sum())
        covering = int(((table["lo"] <= day) & (day <= table["hi"])).sum())
        assert exact <= n <= covering, (day, exact, n, covering)


def test_a_date_qi_gives_the_rows_own_generalised_date() -> None:
    spec = parse_spec({"time_column": "day", "qi": [
        {"name": "day", "type": "date", "hierarchy": {"levels": ["day", "month", "year"]}},
        {"name": "sex", "type": "categorical", "hierarchy": {"rows": [["F", "*"], ["M", "*"]]}}]})
    schema = Schema.from_spec(spec)
    assert date_qi(schema) == "day"
    rows = pd.DataFrame({"day": ["2024-03", "2024-03-05", "*", "[2024-02-27, 2024-03-02]"],
                         "sex": ["F", "M", "*", "F"]})
    days = event_days(["2024-03-09", "2024-03-05", "2024-01-15", "2024-02-28"])
    lo, hi = event_date_spans(rows, days, schema, K)
    assert list(lo) == ["2024-03-01", "2024-03-05", "2024-01-15", "2024-02-27"]  # * gets the release's span
    assert list(hi) == ["2024-03-31", "2024-03-05", "2024-03-09", "2024-03-02"]


def test_event_days_are_utc_days_and_unknown_times_give_no_span() -> None:
    days = event_days(["2024-03-01T23:30:00-02:00", "2024-03-01", None])
    assert [str(d) for d in days[:2]] == ["2024-03-02", "2024-03-01"] and np.isnat(days[2])
    schema = load_schema("crime")
    rows = pd.DataFrame({q: ["*"] * 6 for q in schema.qi_names})
    lo, hi = event_date_spans(rows, event_days(["2024-03-01"] * 5 + [None]), schema, K)
    assert all(v is None for v in [*lo, *hi])  # a class with an unknown day: no span rather than a wrong one
