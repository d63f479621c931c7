"""day_counts: per day, rows dated that day alone <= that day's reports <= rows whose span covers it."""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd
import pytest

from stream.analyst import day_counts


def test_bounds_hold_for_random_spans_around_known_days() -> None:
    rng = np.random.default_rng(2)
    start = pd.Timestamp("2024-03-01")
    own = start + pd.to_timedelta(rng.integers(0, 20, 500), unit="D")  # each row's true day
    lo = own - pd.to_timedelta(rng.integers(0, 3, 500) * rng.integers(0, 2, 500), unit="D")
    hi = own + pd.to_timedelta(rng.integers(0, 4, 500) * rng.integers(0, 2, 500), unit="D")
    df = pd.DataFrame({"event_date_lo": lo.strftime("%Y-%m-%d"), "event_date_hi": hi.strftime("%Y-%m-%d")})
    out = day_counts(df)
    assert out.index[0] == lo.min().date() and out.index[-1] == hi.max().date() and out.index.is_unique
    truth = pd.Series(own.date).value_counts()
    for day, row in out.iterrows():
        n = int(truth.get(day, 0))
        assert row["at_least"] <= n <= row["at_most"], (day, row.to_dict(), n)
        assert row["at_most"] == int(((lo.date <= day) & (day <= hi.date)).sum())  # the oracle, row by row
        assert row["at_least"] == int(((lo.date == day) & (hi.date == day)).sum())


def test_rows_without_a_span_are_left_out_and_old_releases_are_named() -> None:
    df = pd.DataFrame({"event_date_lo": ["2024-03-01", None], "event_date_hi": ["2024-03-02", None]})
    out = day_counts(df)
    assert out.to_dict("index") == {date(2024, 3, 1): {"at_least": 0, "at_most": 1},
                                    date(2024, 3, 2): {"at_least": 0, "at_most": 1}}
    with pytest.raises(ValueError, match="event_date_lo"):
        day_counts(pd.DataFrame({"event_date": ["2024-03-01"]}))
