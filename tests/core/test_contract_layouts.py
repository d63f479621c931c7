"""Dates as stations export them: a declared format may list several layouts, and the families
``us``, ``day-first`` and ``iso`` take an optional time of day (core/contract.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from core import checks, contract
from core.errors import InputDataError, SpecError
from core.hierarchies import DateHierarchy
from core.schema import parse_spec


def _days(values: list[str], fmt: contract.DateFormat | None) -> list[str]:
    days, bad, amb = contract.to_days(pd.Series(values), fmt)
    assert not bad.any() and not amb.any(), (values, bad, amb)
    return list(days.strftime("%Y-%m-%d"))


@pytest.mark.parametrize(("text", "fmt", "day"), [
    ("01/08/2020 00:00", "us", "2020-01-08"),
    ("02/13/2020 12:00:00 AM", "us", "2020-02-13"),
    ("02/13/2020 11:59:59 PM", "us", "2020-02-13"),
    ("2/3/2020 9:05 am", "us", "2020-02-03"),
    ("01/08/2020 00:00:00.250", "us", "2020-01-08"),
    ("13/02/2020 23:59", "day-first", "2020-02-13"),
    ("13/02/2020 12:00:00 PM", "day-first", "2020-02-13"),
    ("2020-01-08T10:00:00Z", "iso", "2020-01-08"),
    ("2020-01-08 10:00", "iso", "2020-01-08"),
    ("2016/01/01 00:47:36", "%Y/%m/%d %H:%M:%S", "2016-01-01"),
    ("2016/01/01 00:47:36", ("us", "%Y/%m/%d %H:%M:%S"), "2016-01-01"),
    ("01/08/2020 00:00", ("us", "%Y/%m/%d %H:%M:%S"), "2020-01-08"),
    ("16/08/2020 10:00", None, "2020-08-16"),
])
def test_the_date_families_take_an_optional_time_of_day(text: str, fmt: contract.DateFormat | None, day: str) -> None:
    assert _days([text], fmt) == [day]


def test_a_real_export_mixing_two_time_layouts_is_read_whole_as_us() -> None:
    column = ["01/08/2020 00:00", "02/13/2020 12:00:00 AM", "02/13/2020 12:30:00 PM", "12/31/2020"]
    assert _days(column, "us") == ["2020-01-08", "2020-02-13", "2020-02-13", "2020-12-31"]
    encoded = DateHierarchy("arrested", fmt="us").encode(pd.Series(column))
    assert encoded.n_leaves == 3  # days are the leaves: two times of one day are one leaf


def test_the_time_is_kept_for_the_event_time() -> None:
    when = contract.parse_date("02/13/2020 12:30:00 PM", "us")
    assert when == pd.Timestamp("2020-02-13T12:30:00Z").to_pydatetime()
    assert contract.parse_date("02/13/2020 12:00:00 AM", "us") == pd.Timestamp("2020-02-13T00:00Z").to_pydatetime()


@pytest.mark.parametrize(("text", "fmt"), [
    ("02/13/2020 13:00 PM", "us"),  # 12-hour clock beyond 12
    ("02/13/2020 0:30 AM", "us"),
    ("02/13/2020 24:00", "us"),
    ("02/13/2020 10", "us"),  # an hour without minutes
    ("02/30/2020", "us"),
    ("13/02/2020", "us"),
    ("02/13/2020", "day-first"),
    ("2020-01-08 10:00 AM", "iso"),
    ("01/08/2020 00:00", "%m/%d/%Y"),  # a strptime pattern stays exact
    ("1990-13-45", ("iso", "us")),
])
def test_what_no_declared_layout_reads_is_refused(text: str, fmt: contract.DateFormat) -> None:
    assert contract.parse_date(text, fmt) is None
    assert checks.value_problems(DateHierarchy("d", fmt=fmt), pd.Series([text])).tolist() == [checks.BAD_DATE]


def test_undeclared_formats_still_refuse_swappable_dates_with_or_without_a_time() -> None:
    values = pd.Series(["05/10/2020 10:00", "05/10/2020", "16/08/2020 10:00", "07/07/2020 23:00"])
    _, bad, amb = contract.to_days(values, None)
    assert amb.tolist() == [True, True, False, False] and not bad.any()
    with pytest.raises(InputDataError, match="ambiguous"):
        DateHierarchy("d").encode(values)


def test_two_declared_layouts_reading_a_value_differently_make_it_ambiguous() -> None:
    fmt = ("us", "%d/%m/%Y")
    assert contract.parse_date("05/10/2020", fmt) is contract.AMBIGUOUS
    assert contract.parse_date("16/10/2020", fmt) is not None  # only the pattern reads it
    assert contract.parse_date("07/07/2020", fmt) is not None  # both read the same day
    with pytest.raises(InputDataError, match="read them as different dates"):
        DateHierarchy("d", fmt=fmt).encode(pd.Series(["05/10/2020"]))


def test_descriptions_name_every_layout() -> None:
    assert "MM/DD/YYYY" in contract.describe_date_format("us")
    text = contract.describe_date_format(("us", "%Y/%m/%d %H:%M:%S"))
    assert text.startswith("one of ") and "MM/DD/YYYY" in text and "%Y/%m/%d %H:%M:%S" in text


def _spec(fmt: object, dob: object = None) -> dict[str, object]:
    return {"qi": [{"name": "d", "type": "date", "hierarchy": {"format": fmt}}],
            "input": {"dates": {"dob": dob}} if dob is not None else {}}


def test_a_spec_declares_a_list_of_layouts() -> None:
    spec = parse_spec(_spec(["us", "%Y/%m/%d %H:%M:%S"], dob=["us", "%Y/%m/%d %H:%M:%S"]))
    assert spec.date_format("d") == ("us", "%Y/%m/%d %H:%M:%S") == spec.date_format("dob")
    assert parse_spec(_spec("day-first")).date_format("d") == "day-first"


@pytest.mark.parametrize(("fmt", "says"), [
    ([], "at least one layout"),
    (["us", "mdy"], "'mdy' must be"),
    (["us", "us"], "twice"),
    (["us", "day-first"], "cannot both be declared"),
    ("", "must be"),
])
def test_a_bad_list_of_layouts_is_one_line(fmt: object, says: str) -> None:
    with pytest.raises(SpecError, match=says) as err:
        parse_spec(_spec(fmt))
    assert "\n" not in str(err.value) and "qi[d].hierarchy.format" in str(err.value)
    with pytest.raises(SpecError, match=says) as err:
        parse_spec(_spec("us", dob=fmt))
    assert "input.dates" in str(err.value)
