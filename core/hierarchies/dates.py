"""Date hierarchies: day -> month -> year -> ``*``.

Leaves are the distinct days in the batch (timezone-aware values are converted to UTC first).
Cost is (days covered - 1) / (days in domain - 1), the ordered-attribute loss of CG eq. 3.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd

from core import contract
from core.errors import InputDataError, preview
from core.hierarchies.base import TOP, EncodedQI, Hierarchy, UnknownPolicy, factorize, unknown_error

_SAFE_YEARS = (1678, 2261)  # whole years inside pandas' nanosecond timestamps
_FORMATS = {"day": "%Y-%m-%d", "month": "%Y-%m", "year": "%Y"}


def ambiguous_error(name: str, shown: list[str], fmt: contract.DateFormat | None) -> InputDataError:
    fix = ("declare format = \"us\" or \"day-first\" in the spec" if fmt is None else
           f"the declared layouts {list(contract.layouts(fmt))} read them as different dates; keep one")
    return InputDataError(f"column '{name}' has ambiguous dates (day and month could be swapped): "
                          f"{preview(shown)}; {fix}", reason="ambiguous-date")


def unparsed_error(name: str, shown: list[str], fmt: contract.DateFormat | None) -> InputDataError:
    return InputDataError(f"column '{name}' is a date ({contract.describe_date_format(fmt)}) but has "
                          f"unparseable values: {preview(shown)}", reason="invalid-date")


def to_days(name: str, values: pd.Series, fmt: contract.DateFormat | None = None) -> pd.DatetimeIndex:
    """Days of ``values`` parsed by the declared format (see core/contract.py); refuses bad or ambiguous ones.

    Values with a time of day (``01/08/2020 00:00``) become their day: the hierarchy's leaves are days."""
    days, bad, ambiguous = contract.to_days(values, fmt)
    if ambiguous.any():
        raise ambiguous_error(name, values[ambiguous].astype(str).unique().tolist(), fmt)
    if bad.any():
        raise unparsed_error(name, values[bad].astype(str).unique().tolist(), fmt)
    return days


class DateHierarchy(Hierarchy):
    def __init__(self, name: str, levels: tuple[str, ...] = ("day", "month", "year"),
                 domain: tuple[str, str] | None = None, fmt: contract.DateFormat | None = None) -> None:
        super().__init__(name)
        self.levels = levels
        self.domain = domain
        self.format = fmt

    def _days(self, distinct: pd.Series, unknown: UnknownPolicy) -> tuple[pd.DatetimeIndex, pd.Timestamp, pd.Timestamp]:
        """The days of ``distinct`` and the domain's first and last day; raises on what the hierarchy refuses
        (unparseable or ambiguous dates, days outside a declared domain when ``unknown`` is ``error``)."""
        days = to_days(self.name, distinct, self.format)
        if self.domain is not None:
            lo_d, hi_d = self._domain_days()
            outside = (days < lo_d) | (days > hi_d)
            if outside.any() and unknown == "error":
                raise unknown_error(self.name, days[outside].strftime("%Y-%m-%d"))
            return days, lo_d, hi_d
        return days, days.min(), days.max()

    def _domain_days(self) -> tuple[pd.Timestamp, pd.Timestamp]:
        """The declared domain's first and last day (UTC); only called when a domain is declared."""
        assert self.domain is not None
        lo_d, hi_d = (pd.Timestamp(d, tz="UTC") for d in self.domain)
        return lo_d, hi_d

    def check(self, values: pd.Series, unknown: UnknownPolicy = "error") -> None:
        """What :meth:`encode` refuses, without building the levels (a report's date, at intake)."""
        self._days(values, unknown)

    def check_value(self, value: str, unknown: UnknownPolicy = "error") -> None:
        """:meth:`check` of one value by the contract's scalar parser (no pandas column per report). A
        day outside pandas' timestamp range (years 1678-2261) takes the column path, which refuses it."""
        got = contract.parse_date(value, self.format)
        if got is contract.AMBIGUOUS:
            raise ambiguous_error(self.name, [value], self.format)
        if not isinstance(got, datetime):
            raise unparsed_error(self.name, [value], self.format)
        if not _SAFE_YEARS[0] <= got.year <= _SAFE_YEARS[1]:
            self.check(pd.Series([value]), unknown)
            return
        if self.domain is not None and unknown == "error":
            day = got.replace(hour=0, minute=0, second=0, microsecond=0)
            lo_d, hi_d = self._domain_days()
            if day < lo_d or day > hi_d:
                raise unknown_error(self.name, [day.strftime("%Y-%m-%d")])

    def encode(self, values: pd.Series, unknown: UnknownPolicy = "error") -> EncodedQI:
        row_code, distinct = factorize(values)
        days, lo_d, hi_d = self._days(pd.Series(distinct), unknown)  # parse each distinct value once
        dom = (lo_d.value / 86400e9, hi_d.value / 86400e9)
        span = max(dom[1] - dom[0], 1.0)
        leaves, distinct_leaf = np.unique(days.asi8, return_inverse=True)
        codes = distinct_leaf.ravel()[row_code]
        leaf_ts = pd.DatetimeIndex(leaves, tz="UTC")
        maps, labels, lows, highs, costs = [], [], [], [], []
        for lvl in self.levels:
            lab = np.asarray(leaf_ts.strftime(_FORMATS[lvl]), dtype=object)
            m, uniq = pd.factorize(pd.Series(lab), sort=False)
            start = pd.DatetimeIndex(pd.to_datetime(pd.Series(uniq), format=_FORMATS[lvl], utc=True))
            nxt = {"day": pd.DateOffset(days=1), "month": pd.DateOffset(months=1), "year": pd.DateOffset(years=1)}[lvl]
            lo = start.asi8 / 86400e9
            hi = (start + nxt).asi8 / 86400e9
            maps.append(m.astype(np.int32))
            labels.append(np.asarray(uniq, dtype=object))
            lows.append(lo)
            highs.append(hi)
            costs.append(np.clip((hi - lo - 1) / span, 0.0, 1.0))
        maps.append(np.zeros(len(leaves), dtype=np.int32))
        labels.append(np.array([TOP], dtype=object))
        lows.append(np.array([dom[0]]))
        highs.append(np.array([dom[1]]))
        costs.append(np.ones(1))
        under = tuple(np.bincount(m, minlength=len(lbl)) for m, lbl in zip(maps, labels, strict=True))
        return EncodedQI(
            name=self.name, kind="date", codes=codes.astype(np.int32), maps=tuple(maps), labels=tuple(labels),
            cost=tuple(costs), leaves_under=under, leaf_values=leaves / 86400e9, low=tuple(lows),
            high=tuple(highs), domain=dom,
        )

    def covers(self, label: str, value: object) -> bool:
        if label == TOP:
            return True
        day = to_days(self.name, pd.Series([value]), self.format)[0]
        return any(day.strftime(_FORMATS[lvl]) == label for lvl in self.levels)
