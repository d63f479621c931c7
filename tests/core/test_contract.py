"""The input contract (core/contract.py): declared date formats, ambiguity, missing values, whole numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core import checks, contract
from core.errors import InputDataError
from core.hierarchies import DateHierarchy, IntervalHierarchy


def test_a_declared_format_decides_day_and_month() -> None:
    values = pd.Series(["05/10/2020", "16/08/2020"])
    days, bad, amb = contract.to_days(values, "day-first")
    assert list(days.strftime("%Y-%m-%d")) == ["2020-10-05", "2020-08-16"] and not bad.any() and not amb.any()
    days, bad, _ = contract.to_days(values, "us")
    assert days.strftime("%Y-%m-%d")[0] == "2020-05-10" and bad.tolist() == [False, True]


def test_without_a_format_a_swappable_date_is_ambiguous_never_guessed() -> None:
    values = pd.Series(["2020-10-05", "16/08/2020", "08/16/2020", "05/10/2020", "07/07/2020", "1990-13-45"])
    days, bad, amb = contract.to_days(values, None)
    assert amb.tolist() == [False, False, False, True, False, False]
    assert bad.tolist() == [False, False, False, False, False, True]
    assert list(days[:3].strftime("%Y-%m-%d")) == ["2020-10-05", "2020-08-16", "2020-08-16"]
    with pytest.raises(InputDataError, match="ambiguous"):
        DateHierarchy("d").encode(values[:4])


def test_strict_formats_refuse_impossible_dates() -> None:
    verdict = checks.value_problems(DateHierarchy("dob", fmt="iso"), pd.Series(["1990-13-45", "1990-01-31", "x"]))
    assert verdict.tolist() == [checks.BAD_DATE, "", checks.BAD_DATE]


def test_an_integer_hierarchy_refuses_fractions() -> None:
    h = IntervalHierarchy("age", widths=(5, 10), domain=(0, 120), integer=True)
    verdict = checks.value_problems(h, pd.Series(["34", "34.5", "forty", "130"]))
    assert verdict.tolist() == ["", checks.NOT_WHOLE, checks.NOT_A_NUMBER, checks.NOT_IN_HIERARCHY]
    with pytest.raises(InputDataError, match="whole numbers"):
        h.encode(pd.Series(["34.5"]))
    assert IntervalHierarchy("age", widths=(5,), domain=(0, 120)).encode(pd.Series(["34.5"])).n_leaves == 1


def test_missing_values() -> None:
    values = pd.Series(["a", "", " ", None, np.nan, "?", "None"])
    assert contract.missing_mask(values, ["?"]).tolist() == [False, True, True, True, True, True, False]
    assert contract.is_missing(" ", ()) and contract.is_missing(None) and not contract.is_missing("0")
