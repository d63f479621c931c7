"""Canonical values: one report written in two layouts has one content; different values stay apart."""

from __future__ import annotations

from datetime import date

from hypothesis import given
from hypothesis import strategies as st

from core.canonical import canonical_number, canonical_value, folds_case
from core.hierarchies import DateHierarchy, IntervalHierarchy, MaskHierarchy, TableHierarchy

US = DateHierarchy("arrest_date", fmt="us")
AGE = IntervalHierarchy("age", widths=(10, 20), domain=(0, 120), integer=True)
SEX = TableHierarchy("sex", [["F", "*"], ["M", "*"]])


def test_a_date_is_its_day_by_the_declared_format() -> None:
    assert canonical_value(US, "06/17/2020") == canonical_value(US, "6/17/2020") == "2020-06-17"
    assert canonical_value(US, " 06/17/2020 ") == "2020-06-17"
    assert canonical_value(DateHierarchy("d", fmt="day-first"), "17/6/2020") == "2020-06-17"
    assert canonical_value(DateHierarchy("d"), "2020-06-17T00:00:00+00:00") == "2020-06-17"
    assert canonical_value(US, "06/18/2020") != canonical_value(US, "06/17/2020")
    assert canonical_value(US, "not a date") == "not a date"  # refused by the contract anyway


def test_a_date_time_is_its_day_whatever_the_declared_layout_that_reads_it() -> None:
    assert canonical_value(US, "06/17/2020 12:00:00 AM") == canonical_value(US, "6/17/2020 00:00") == "2020-06-17"
    two = DateHierarchy("d", fmt=("us", "%Y/%m/%d %H:%M:%S"))  # two systems' layouts, one column
    assert canonical_value(two, "2020/06/17 10:01:00") == canonical_value(two, "06/17/2020") == "2020-06-17"


def test_a_number_is_its_value() -> None:
    assert canonical_value(AGE, "030") == canonical_value(AGE, "30") == canonical_value(AGE, "30.0") == "30"
    assert canonical_value(AGE, "31") != canonical_value(AGE, "30")
    assert canonical_value(None, "007") == "7"  # a column without a hierarchy: plain numbers too
    assert canonical_value(None, "12345678901234567890") == "12345678901234567890"  # long codes keep every digit
    assert canonical_value(None, "12345678901234567891") != canonical_value(None, "12345678901234567890")
    assert canonical_number("-0") == "0" and canonical_number("1.50") == "1.5" and canonical_number("nan") is None


def test_text_is_trimmed_and_case_folded_where_the_hierarchy_folds_case() -> None:
    assert folds_case(SEX)
    assert canonical_value(SEX, "M") == canonical_value(SEX, " m ") == canonical_value(SEX, "m")
    assert canonical_value(SEX, "F") != canonical_value(SEX, "M")
    assert canonical_value(None, "Petit  Larceny ") == canonical_value(None, "PETIT LARCENY")
    assert canonical_value(MaskHierarchy("postcode"), "sw1a") == canonical_value(MaskHierarchy("postcode"), "SW1A")


def test_a_hierarchy_that_tells_case_apart_keeps_it() -> None:
    cased = TableHierarchy("code", [["M", "x", "*"], ["m", "y", "*"], ["01", "x", "*"], ["1", "y", "*"]])
    assert not folds_case(cased)
    assert canonical_value(cased, "M") != canonical_value(cased, "m")
    assert canonical_value(cased, "01") != canonical_value(cased, "1")
    assert canonical_value(cased, " M ") == "M"


@given(st.integers(min_value=0, max_value=119), st.integers(min_value=0, max_value=3))
def test_zero_padding_never_changes_a_number(age: int, pad: int) -> None:
    assert canonical_value(AGE, f"{age:0{pad + 1}d}") == canonical_value(AGE, str(age))


@given(st.dates(min_value=date(1900, 1, 1), max_value=date(2100, 1, 1)))
def test_padded_and_unpadded_us_dates_are_one_day(day) -> None:  # type: ignore[no-untyped-def]
    padded, bare = day.strftime("%m/%d/%Y"), f"{day.month}/{day.day}/{day.year}"
    assert canonical_value(US, padded) == canonical_value(US, bare) == day.isoformat()
