"""The date format the draft declares reads every value of the column, by the contract's own parser."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import contract
from stream.specdraft.dates import DATE_PARTS, TIME_PARTS, date_format_for


@pytest.mark.parametrize(("values", "declared"), [
    (["01/08/2020 00:00", "02/13/2020 00:00"], "us"),  # the families read a time of day
    (["02/13/2020 12:00:00 AM", "03/01/2020 01:15:00 PM"], "us"),
    (["01/08/2020 00:00", "02/13/2020 12:00:00 AM"], "us"),  # one real export mixes these two
    (["13/02/2020 23:59", "01/02/2020 1:05 PM"], "day-first"),
    (["08.01.2020 10:00", "13.02.2020 23:00"], "%d.%m.%Y %H:%M"),
    (["2016/01/01 00:47:36", "2016/12/31 23:00:01"], "%Y/%m/%d %H:%M:%S"),
    (["2021-01-08T10:00:00Z", "2021-02-01T23:59:59Z"], "iso"),
    (["2021-01-08", "2021-02-01"], "iso"),
    (["09/25/2021", "01/01/2021"], "us"),
    (["13/02/2020", "01/02/2020"], "day-first"),
    (["01-Jan-2021", "13-Feb-2021"], "%d-%b-%Y"),
])
def test_a_layout_gets_a_format_that_reads_it(values: list[str], declared: str) -> None:
    choice = date_format_for(pd.Series(values))
    assert choice.format == declared
    _parsed, bad, ambiguous = contract.parse_dates(pd.Series(values), choice.format)
    assert not bad.any() and not ambiguous.any()


def test_year_first_slashes_with_a_time_are_never_declared_iso() -> None:
    values = pd.Series(["2016/01/01 00:47:36", "2016/01/02 13:05:00"])
    assert date_format_for(values).format == "%Y/%m/%d %H:%M:%S"
    _parsed, bad, _amb = contract.parse_dates(values, "iso")
    assert bad.all()  # what the earlier draft declared: its own check refused every row


def test_swappable_day_and_month_are_assumed_us_with_a_note() -> None:
    choice = date_format_for(pd.Series(["01/02/2020", "03/04/2020"]))
    assert choice.format == "us" and "assumed US" in choice.note
    assert "MM/DD and DD/MM" in date_format_for(pd.Series(["01-02-2020", "03-04-2020"])).note


def test_two_layouts_no_one_format_reads_are_declared_as_a_list() -> None:
    values = pd.Series(["2016/01/01 00:47:36", "02/13/2020 12:00:00 AM"])
    choice = date_format_for(values)
    assert choice.format == ["us", "%Y/%m/%d %H:%M:%S"]
    _parsed, bad, ambiguous = contract.parse_dates(values, tuple(choice.format))
    assert not bad.any() and not ambiguous.any()


def test_month_first_and_day_first_in_one_column_are_not_declared() -> None:
    choice = date_format_for(pd.Series(["13/02/2020", "02/13/2020"]))  # every later 01/02 would be ambiguous
    assert choice.format is None and "several layouts" in choice.note


@pytest.mark.parametrize("values", [["1", "2", "3"], ["PL 1200501", "PL 22"], ["ROBBERY", "RAPE"], ["12.5", "3"]])
def test_numbers_codes_and_words_are_not_dates(values: list[str]) -> None:
    assert date_format_for(pd.Series(values)).format is None


LAYOUTS = [d + t for _, d in DATE_PARTS for t in TIME_PARTS]


@settings(max_examples=25, deadline=None)
@given(days=st.lists(st.datetimes(min_value=datetime(1950, 1, 1), max_value=datetime(2049, 12, 31)),
                     min_size=1, max_size=30),
       layouts=st.lists(st.sampled_from(LAYOUTS), min_size=1, max_size=2))
def test_a_declared_format_never_fails_on_the_column_it_was_drafted_from(days: list[datetime],
                                                                          layouts: list[str]) -> None:
    values = pd.Series([d.strftime(layouts[i % len(layouts)]) for i, d in enumerate(days)])
    choice = date_format_for(values)
    if choice.format is not None:
        fmt = choice.format  # a spec's list of layouts is a tuple once loaded
        _parsed, bad, ambiguous = contract.parse_dates(values, fmt if isinstance(fmt, str) else tuple(fmt))
        assert not bad.any() and not ambiguous.any(), (choice, values.tolist())
    if len(set(layouts)) == 1 and len(days) >= 1:
        assert choice.format is not None, values.tolist()  # one layout is always recognised
