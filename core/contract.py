"""The input contract shared by the batch readers and the stream validator.

One place decides what a raw value means, so a file gives the same rows whether it is anonymized
in one batch (``anonstream anonymize``) or pushed report by report (``anonstream push`` and the
workers):

- **Dates** are parsed by the format the spec declares for the column: one layout or a list of
  them (``format = "us"``, ``["us", "%Y/%m/%d %H:%M:%S"]``), each ``"iso"``, ``"us"``,
  ``"day-first"`` (the three accept an optional time of day: ``01/08/2020 00:00``,
  ``02/13/2020 12:00:00 AM``, ``2020-01-08T10:00:00Z``) or a ``strptime`` pattern. Without a
  declared format a value must be ISO 8601 or a slash date whose day and month cannot be swapped
  (``16/08/2020``); a value such as ``05/10/2020`` is *ambiguous* and refused, never guessed, and
  so is a value two declared layouts read differently.
- **Missing values** (empty cells, ``null`` and the spec's ``missing`` tokens) follow the spec's
  ``on_missing`` policy: ``error`` (refused), ``drop`` (the row is dropped and counted) or ``leaf``
  (the value becomes the ``missing_label`` leaf, which the hierarchy must list).
- **Whole numbers**: an interval hierarchy with ``integer = true`` refuses ``34.5``.

Everything here is pure: pandas in, masks and parsed values out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import lru_cache

import numpy as np
import pandas as pd

DateFormat = str | tuple[str, ...]  # one layout, or several (a TOML list in the spec)
DATE_FAMILIES = ("iso", "us", "day-first")
NULL_TOKENS = frozenset({""})  # plus NA/None/NaN objects and the spec's `missing` tokens

# A slash date (month/day/year or day/month/year) with an optional time of day: 24-hour or 12-hour
# with AM/PM, seconds and fractions optional ("01/08/2020", "01/08/2020 00:00", "2/13/2020 12:00:00 AM").
_SLASH = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4})"
                    r"(?:(?:\s+|T)(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,6}))?)?(?:\s*([AaPp])\.?[Mm]\.?)?)?")
_WORDS = {"iso": "ISO 8601 (YYYY-MM-DD, optional time: T10:00:00Z)",
          "us": "MM/DD/YYYY (optional time: 00:00, 12:00:00 AM)",
          "day-first": "DD/MM/YYYY (optional time: 00:00, 12:00:00 AM)"}


def layouts(fmt: DateFormat | None) -> tuple[str, ...]:
    """The declared layouts of a format, in order (empty when none is declared)."""
    if fmt is None:
        return ()
    return (fmt,) if isinstance(fmt, str) else tuple(fmt)


def describe_date_format(fmt: DateFormat | None) -> str:
    """Human wording of a declared format for error messages."""
    if fmt is None:
        return "ISO 8601 (YYYY-MM-DD) or an unambiguous DD/MM/YYYY or MM/DD/YYYY date, optionally with a time"
    words = [_WORDS.get(f, f) for f in layouts(fmt)]
    return words[0] if len(words) == 1 else "one of " + "; ".join(words)


def check_date_format(v: DateFormat) -> DateFormat:
    """A declared date format (one layout or a non-empty list of distinct layouts), else ValueError."""
    given = (v,) if isinstance(v, str) else v
    if not given:
        raise ValueError("a list of date formats must name at least one layout")
    for layout in given:
        if layout not in DATE_FAMILIES and "%" not in layout:
            raise ValueError(f"date format {layout!r} must be 'iso', 'us', 'day-first' or a strptime pattern "
                             "like '%d.%m.%Y' (or a list of them)")
    if len(set(given)) < len(given):
        raise ValueError(f"date formats {list(given)} name a layout twice")
    if {"us", "day-first"} <= set(given):
        raise ValueError("date formats 'us' and 'day-first' cannot both be declared: every date whose day is "
                         "12 or less would be ambiguous")
    return v if isinstance(v, str) else tuple(v)


def check_encoding(name: str) -> str:
    """A declared text encoding (``[input] encoding``), else ValueError."""
    try:
        "".encode(name)  # a text encoding (codecs.lookup also knows base64, rot13 ...)
    except LookupError:
        raise ValueError(f"unknown encoding {name!r}; use a name such as 'utf-8', 'cp1252' or 'latin-1'") from None
    return name


AMBIGUOUS = "ambiguous"


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _iso(text: str) -> datetime | None:
    try:
        return _utc(datetime.fromisoformat(text))
    except (ValueError, OverflowError):  # OverflowError: an offset pushing year 1 below the range
        return None


def _slash(text: str, month_first: bool) -> datetime | None:
    m = _SLASH.fullmatch(text)
    if m is None:
        return None
    a, b, year, hour, minute, second, fraction, half = m.groups()
    month, day = (a, b) if month_first else (b, a)
    h = int(hour or 0)
    if half is not None:  # 12-hour clock: 12 AM is midnight, 12 PM is noon
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if half in "Pp" else 0)
    try:
        return datetime(int(year), int(month), int(day), h, int(minute or 0), int(second or 0),
                        int((fraction or "0").ljust(6, "0")), tzinfo=UTC)
    except ValueError:
        return None


def _pattern(text: str, pattern: str) -> datetime | None:
    try:
        return _utc(datetime.strptime(text, pattern))
    except (ValueError, OverflowError):
        return None


def _layout(text: str, layout: str) -> datetime | None:
    if layout == "iso":
        return _iso(text)
    if layout in ("us", "day-first"):
        return _slash(text, month_first=layout == "us")
    return _pattern(text, layout)


def parse_date(text: str, fmt: DateFormat | None) -> datetime | str | None:
    """One value by the declared format: a UTC datetime, :data:`AMBIGUOUS`, or None if it does not parse.

    This is the only date parser of the contract: the stream calls it per report and
    :func:`parse_dates` calls it once per distinct value of a column. Naive times are UTC.
    A format lists one or several layouts: ``iso``, ``us`` and ``day-first`` (each with an optional
    time of day) or ``strptime`` patterns. A value read by several declared layouts as different
    times is :data:`AMBIGUOUS` (never guessed); without a declared format a value must be ISO 8601 or
    a slash date whose day and month cannot be swapped.
    """
    text = text.strip()
    declared = layouts(fmt)
    if not declared:
        when = _iso(text)
        if when is not None:
            return when
        declared = ("us", "day-first")
    read = {w for w in (_layout(text, lay) for lay in declared) if w is not None}
    if len(read) > 1:
        return AMBIGUOUS
    return read.pop() if read else None


def parse_dates(values: pd.Series, fmt: DateFormat | None) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """Parse ``values`` as UTC timestamps by the declared format (:func:`parse_date` per distinct value).

    Returns ``(parsed, bad, ambiguous)``: the parsed timestamps (``NaT`` where refused), a mask of
    values that do not parse, and a mask of values refused because day and month could be swapped
    (only possible when no format is declared).
    """
    text = values.astype(str)
    codes, uniq = pd.factorize(text, sort=False)
    got = [parse_date(u, fmt) for u in uniq]
    amb_u = np.array([g is AMBIGUOUS for g in got] + [False], dtype=bool)
    stamps = pd.DatetimeIndex([g if isinstance(g, datetime) else pd.NaT for g in got] + [pd.NaT], tz=UTC)
    parsed = pd.Series(stamps[codes], index=values.index)
    ambiguous = amb_u[codes]
    bad = parsed.isna().to_numpy() & ~ambiguous
    return parsed, bad, ambiguous


def to_days(values: pd.Series, fmt: DateFormat | None) -> tuple[pd.DatetimeIndex, np.ndarray, np.ndarray]:
    """Like :func:`parse_dates`, normalised to UTC midnight (the leaves of a date hierarchy)."""
    parsed, bad, ambiguous = parse_dates(values, fmt)
    return pd.DatetimeIndex(parsed).tz_convert("UTC").normalize(), bad, ambiguous


def not_whole(numbers: np.ndarray) -> np.ndarray:
    """Mask of finite values with a fractional part (refused by an integer hierarchy)."""
    return np.isfinite(numbers) & (np.floor(numbers) != numbers)


def missing_mask(values: pd.Series, tokens: Iterable[str] = ()) -> np.ndarray:
    """True where a value is missing: NA/None, empty after stripping, or one of the spec's tokens."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)  # each distinct value is judged once
    return np.append(missing_distinct(uniques, tokens), True)[codes]  # code -1 (NA) picks the last


def missing_distinct(uniques: object, tokens: Iterable[str] = ()) -> np.ndarray:
    """:func:`missing_mask` of a column's distinct values, none of them NA (e.g. ``pd.factorize``'s
    uniques): each is judged as it is, without factorizing them again."""
    text = pd.Series(uniques, dtype=object).astype(str).str.strip()
    return text.isin(_token_set(tuple(tokens))).to_numpy(dtype=bool)


@lru_cache(maxsize=64)
def _token_set(tokens: tuple[str, ...]) -> frozenset[str]:
    return NULL_TOKENS | {t.strip() for t in tokens}


def is_missing(value: object, tokens: Iterable[str] = ()) -> bool:
    """Scalar form of :func:`missing_mask` (used per report by the stream)."""
    if value is None or (isinstance(value, float) and value != value):
        return True
    return (value.strip() if isinstance(value, str) else str(value)) in _token_set(tuple(tokens))
