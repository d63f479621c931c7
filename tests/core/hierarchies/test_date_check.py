"""A date hierarchy's :meth:`check` (what intake asks of each report's date) refuses exactly what its
:meth:`encode` refuses, with the same error, without building the levels."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from core.errors import AnonymizationError
from core.hierarchies.base import UnknownPolicy
from core.hierarchies.dates import DateHierarchy

HIERARCHIES = [DateHierarchy("d"), DateHierarchy("d", domain=("2024-01-01", "2024-12-31")),
               DateHierarchy("d", fmt="day-first"), DateHierarchy("d", fmt="us")]
VALUES = ["2024-03-01", "2024-03-01T23:30:00+02:00", "01/02/2024", "13/02/2024", "02/13/2024", "2023-12-31",
          "2025-01-01", "not a date", "2024-02-30", "", "31/12/2024 10:00"]


def _outcome(method: Callable[[pd.Series, UnknownPolicy], object], value: str, unknown: UnknownPolicy) -> str | None:
    try:
        method(pd.Series([value]), unknown)
    except (AnonymizationError, ValueError, TypeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


@pytest.mark.parametrize("hierarchy", HIERARCHIES, ids=["any", "domain", "day-first", "us"])
@pytest.mark.parametrize("unknown", ["error", "top"])
def test_check_refuses_what_encode_refuses(hierarchy: DateHierarchy, unknown: UnknownPolicy) -> None:
    outcomes = []
    for value in VALUES:
        expected = _outcome(hierarchy.encode, value, unknown)
        assert _outcome(hierarchy.check, value, unknown) == expected, value
        outcomes.append(expected)
    assert None in outcomes and any(outcomes)  # both kinds are exercised
