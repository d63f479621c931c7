"""The date format ``anonstream spec draft`` declares for a column: one that reads every value.

:func:`date_format_for` is the one place the choice is made. Each candidate is tried with the input
contract's own parser (``core.contract.parse_dates``), the one ``spec check``, ``anonymize`` and the
stream use, so a declared format never fails on the column's own values. Candidates go from the
date families (``iso``, ``us``, ``day-first``, which read an optional time of day: ``01/08/2020
00:00``, ``02/13/2020 12:00:00 AM``, ``2021-01-08T10:00:00Z``) to explicit ``strptime`` patterns,
with or without a time part (``%Y/%m/%d %H:%M:%S``, ``%d.%m.%Y`` ...): the first that reads every
value wins, so a family name is declared wherever a family reads the layout, and an explicit pattern
only where none does. A column mixing two layouts no single one reads gets both, as a list.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from core import contract

# Date parts as (family or None, strptime pattern); the family is declared when the contract's family
# reads the values, the pattern otherwise. US before day-first: when both read, US is assumed (noted).
DATE_PARTS: tuple[tuple[str | None, str], ...] = (
    ("iso", "%Y-%m-%d"), ("us", "%m/%d/%Y"), ("day-first", "%d/%m/%Y"), (None, "%Y/%m/%d"),
    (None, "%d.%m.%Y"), (None, "%d-%m-%Y"), (None, "%m-%d-%Y"), (None, "%d-%b-%Y"), (None, "%d %b %Y"),
    (None, "%b %d %Y"), (None, "%b %d, %Y"),
)
TIME_PARTS: tuple[str, ...] = (
    "", " %H:%M", " %H:%M:%S", " %H:%M:%S.%f", " %I:%M %p", " %I:%M:%S %p", "T%H:%M", "T%H:%M:%S",
    "T%H:%M:%S.%f",
)
PROBE = 64  # distinct values tried first: candidates that fail on these are not tried on the rest
# What every date value holds somewhere: digits with two separators (2021-01-08, 1/8/21) or a month name.
DATEISH = re.compile(r"\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}|\d{1,2}[ -][A-Za-z]{3}|[A-Za-z]{3} \d{1,2}")


@dataclass(frozen=True)
class DateChoice:
    """The format to declare (a family name, a strptime pattern, or a list of them) and a note."""

    format: str | list[str] | None
    note: str = ""


def candidates() -> list[str]:
    """Every format tried, in order: the families, then each date part with each time part."""
    out = [family for family, _ in DATE_PARTS if family]
    out += [date + time for _, date in DATE_PARTS for time in TIME_PARTS]
    return list(dict.fromkeys(out))


def _read(fmt: Any, values: np.ndarray) -> np.ndarray:
    """Mask of the values the contract's parser reads by ``fmt``; none when it does not understand
    ``fmt`` (a list of formats, before the contract reads lists)."""
    try:
        _parsed, bad, ambiguous = contract.parse_dates(pd.Series(values, dtype=object), fmt)
    except (TypeError, ValueError, AttributeError):
        return np.zeros(len(values), dtype=bool)
    return ~(bad | ambiguous)


def reads(fmt: str | list[str], values: np.ndarray) -> bool:
    """True if the contract's parser reads every value by ``fmt``."""
    return bool(_read(fmt, values).all())


def _order(layout: str) -> str:
    """``mdy`` for a month-first layout, ``dmy`` for a day-first one, else ``""``."""
    if layout == "us" or layout.startswith(("%m/%d", "%m-%d", "%m.%d")):
        return "mdy"
    if layout == "day-first" or layout.startswith(("%d/%m", "%d-%m", "%d.%m")):
        return "dmy"
    return ""


def _declarable(fmt: tuple[str, ...]) -> bool:
    """True if the spec accepts this list of layouts and it does not read days as months: a month-first
    and a day-first layout together would refuse every later date whose day is 12 or less as ambiguous."""
    if {"mdy", "dmy"} <= {_order(f) for f in fmt}:
        return False
    try:
        contract.check_date_format(fmt)
    except ValueError:
        return False
    return True


def _probe(values: np.ndarray) -> np.ndarray:
    if len(values) <= PROBE:
        return values
    return values[np.linspace(0, len(values) - 1, PROBE).astype(int)]


def _note(chosen: str, tried: list[str], probe: np.ndarray, uniq: np.ndarray) -> str:
    """When a layout with day and month swapped reads every value too, say which reading was assumed."""
    order = _order(chosen)
    if not order:
        return ""
    swapped = [f for f in tried if _order(f) not in ("", order)]
    if any(reads(f, probe) and reads(f, uniq) for f in swapped):
        assumed = "US (month first)" if order == "mdy" else "day first"
        return f"every value fits both MM/DD and DD/MM; assumed {assumed}: check"
    return ""


def date_format_for(values: pd.Series) -> DateChoice:
    """The format to declare for a column whose non-missing values are ``values`` (stripped strings).

    ``DateChoice(None)`` when the column is not a date: plain numbers, text, or layouts no single
    declared format reads (with a note naming the layouts when lists are not read by the contract).
    """
    uniq = pd.unique(values.astype(str))
    if not len(uniq) or not all(any(ch.isdigit() for ch in v) for v in uniq):
        return DateChoice(None)
    if pd.Series(uniq).str.fullmatch(r"[+-]?\d+(\.\d+)?").all():
        return DateChoice(None)  # plain numbers are never dates
    probe = _probe(uniq)
    if not all(DATEISH.search(v) for v in probe):
        return DateChoice(None)
    tried = candidates()
    chosen = next((f for f in tried if reads(f, probe) and reads(f, uniq)), None)
    if chosen is not None:
        return DateChoice(chosen, _note(chosen, tried, probe, uniq))
    partial = [f for f in tried if _read(f, probe).any()]
    if not partial:
        return DateChoice(None)
    for pair in itertools.combinations(partial[:8], 2):
        if _declarable(pair) and reads(list(pair), probe) and reads(list(pair), uniq):
            return DateChoice(list(pair), "mixes two layouts: both declared")
    shown = ", ".join(f"'{f}'" for f in partial[:3])
    return DateChoice(None, f"dates in several layouts ({shown} ...) that no single declared format reads")

