"""Canonical values: one report written in two layouts has one content; different values stay apart."""

from __future__ import annotations

from datetime import date

from hypothesis import assume, given
from hypothesis import strategies as st

from core.canonical import (
    canonical_id,
    canonical_number,
    canonical_value,
    collision_lines,
    folds_case,
    id_collisions,
    station_id,
)
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
def test_padded_and_unpadded_us_dates_are_one_day(day: date) -> None:
    padded, bare = day.strftime("%m/%d/%Y"), f"{day.month}/{day.day}/{day.year}"
    assert canonical_value(US, padded) == canonical_value(US, bare) == day.isoformat()


# --- station and report ids: one canonical form (core.canonical.canonical_id) -------------------------

_SPACE = st.text(alphabet=" \t", max_size=3)


@given(st.integers(min_value=0, max_value=10**40), st.integers(min_value=0, max_value=6), _SPACE, _SPACE)
def test_a_digit_only_id_is_its_number_whatever_its_zeros_and_spaces(n: int, zeros: int, left: str,
                                                                      right: str) -> None:
    spelled = f"{left}{'0' * zeros}{n}{right}"
    assert canonical_id(spelled) == canonical_id(n) == str(n)
    assert canonical_id(canonical_id(spelled)) == canonical_id(spelled)  # idempotent


@given(st.text(alphabet="AZaz09._- ", min_size=1, max_size=12), _SPACE, _SPACE)
def test_an_id_that_is_not_digits_only_is_only_trimmed(text: str, left: str, right: str) -> None:
    trimmed = text.strip()
    assume(trimmed and not trimmed.isdigit())  # digit-only ids: the test above
    assert canonical_id(f"{left}{text}{right}") == trimmed  # zeros, case and inner characters kept


def test_id_examples() -> None:
    assert [canonical_id(v) for v in ("08", " 8 ", "8", "0", "00", "S08", "8a", "-8", "+8", "08.0")] == \
        ["8", "8", "8", "0", "0", "S08", "8a", "-8", "+8", "08.0"]
    assert canonical_id("٣") == "٣"  # only ASCII digits are read as a number
    assert station_id is canonical_id


def test_collisions_name_every_spelling_of_one_id() -> None:
    found = id_collisions(["08", "8", " 8", "S1", "S1", None, "", "007", "7", "S01"])
    assert found == {"7": ["007", "7"], "8": [" 8", "08", "8"]}
    lines = collision_lines("station", found)
    assert lines == ["station ids `007` and `7` are one station after normalisation (leading zeros and spaces are "
                     "ignored)",
                     "station ids ` 8`, `08` and `8` are one station after normalisation (leading zeros and spaces "
                     "are ignored)"]
    many = id_collisions(f"{'0' * z}{i}" for i in range(1, 9) for z in (0, 1))
    assert len(many) == 8 and collision_lines("report", many, limit=3)[-1] == \
        "... and 5 more report id(s) written in more than one way"
    assert id_collisions(["S1", "S2", "8"]) == {}
