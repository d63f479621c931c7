"""``check_value`` (what intake asks of one report's field, without a pandas column) refuses exactly
what ``encode`` refuses for that value, with the same error and reason, for every hierarchy kind."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import AnonymizationError
from core.hierarchies.base import Hierarchy, UnknownPolicy
from core.hierarchies.dates import DateHierarchy
from core.hierarchies.intervals import IntervalHierarchy
from core.hierarchies.masking import MaskHierarchy
from core.hierarchies.table import TableHierarchy

HIERARCHIES: dict[str, Hierarchy] = {
    "date": DateHierarchy("d"),
    "date-domain": DateHierarchy("d", domain=("2024-01-01", "2024-12-31")),
    "date-us": DateHierarchy("d", fmt="us"),
    "date-pattern": DateHierarchy("d", fmt=("iso", "%d.%m.%Y")),
    "interval": IntervalHierarchy("age", widths=(5, 10)),
    "interval-domain": IntervalHierarchy("age", widths=(5, 10), domain=(0, 100), integer=True),
    "interval-edges": IntervalHierarchy("x", edges=((0, 18, 30, 65, 120), (0, 30, 120))),
    "table": TableHierarchy("sex", [["M", "*"], ["F", "*"], ["X", "*"]]),
    "mask": MaskHierarchy("pc"),
    "mask-4": MaskHierarchy("pc", length=4),
}
VALUES = ["2024-03-01", "2024-03-01T23:30:00+02:00", "01/02/2024", "13/02/2024", "02/13/2024", "2023-12-31",
          "1500-01-01", "2300-06-01", "0001-01-01", "31.12.2024", "not a date", "2024-02-30", "",
          "34", "34.5", "-3", "100", "120", "0", "1e3", "forty", "+7", "007", "12345678901234567890", "nan",
          "M", "F", "m", "X ", "80015", "8001", "800155"]


def outcome(method: Callable[..., object], value: object, unknown: UnknownPolicy) -> str | None:
    try:
        method(value, unknown)
    except (AnonymizationError, ValueError, TypeError, Warning) as exc:  # Warning: the suite's filter
        return f"{type(exc).__name__}/{getattr(exc, 'reason', None)}: {exc}"
    return None


def encode_one(hierarchy: Hierarchy) -> Callable[[str, UnknownPolicy], object]:
    return lambda value, unknown: hierarchy.encode(pd.Series([value]), unknown)


@pytest.mark.parametrize("name", list(HIERARCHIES))
@pytest.mark.parametrize("unknown", ["error", "top"])
def test_check_value_refuses_what_encode_refuses(name: str, unknown: UnknownPolicy) -> None:
    hierarchy = HIERARCHIES[name]
    outcomes = []
    for value in VALUES:
        expected = outcome(encode_one(hierarchy), value, unknown)
        assert outcome(hierarchy.check_value, value, unknown) == expected, value
        outcomes.append(expected)
    assert None in outcomes  # accepted values are exercised
    if unknown == "error" and name != "mask":  # a mask without a length takes any code
        assert any(outcomes)  # and refused ones


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(HIERARCHIES)), unknown=st.sampled_from(["error", "top"]),
       value=st.one_of(st.text(max_size=12).map(str.strip),
                       st.floats(-200, 300, allow_nan=False).map(lambda x: f"{x:.2f}"),
                       st.integers(-10, 200).map(str),
                       st.dates().map(lambda d: d.strftime("%m/%d/%Y")), st.dates().map(str)))
def test_check_value_agrees_with_encode_on_any_value(name: str, unknown: UnknownPolicy, value: str) -> None:
    hierarchy = HIERARCHIES[name]
    assert outcome(hierarchy.check_value, value, unknown) == outcome(encode_one(hierarchy), value, unknown)
