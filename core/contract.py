"""The input contract shared by the batch readers and the stream validator.

One place decides what a raw value means, so a file gives the same rows whether it is anonymized
in one batch (``anonstream anonymize``) or pushed report by report (``anonstream push`` and the
workers):

- **Dates** are parsed by the format the spec declares for the column (``format = "us"``,
  ``"day-first"``, ``"iso"`` or any ``strptime`` pattern). Without a declared format a value must
  be ISO 8601 or a slash date whose day and month cannot be swapped (``16/08/2020``); a value such
  as ``05/10/2020`` is *ambiguous* and refused, never guessed.
- **Missing values** (empty cells, ``null`` and the spec's ``missing`` tokens) follow the spec's
  ``on_missing`` policy: ``error`` (refused), ``drop`` (the row is dropped and counted) or ``leaf``
  (the value becomes the ``missing_label`` leaf, which the hierarchy must list).
- **Whole numbers**: an interval hierarchy with ``integer = true`` refuses ``34.5``.

Everything here is pure: pandas in, masks and parsed values out.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from functools import lru_cache

import numpy as np
import pandas as pd

DATE_ALIASES: dict[str, str] = {
    "iso": "ISO8601",
    "us": "%m/%d/%Y",
    "day-first": "%d/%m/%Y",
}
_US, _DAY_FIRST = DATE_ALIASES["us"], DATE_ALIASES["day-first"]
NULL_TOKENS = frozenset({""})  # plus NA/None/NaN objects and the spec's `missing` tokens


def resolve_date_format(fmt: str | None) -> str | None:
    """The pandas format string of a declared format (``None``: ISO or unambiguous slash dates)."""
    if fmt is None:
        return None
    return DATE_ALIASES.get(fmt, fmt)


def describe_date_format(fmt: str | None) -> str:
    """Human wording of a declared format for error messages."""
    if fmt is None:
        return "ISO 8601 (YYYY-MM-DD) or an unambiguous DD/MM/YYYY or MM/DD/YYYY date"
    return {"iso": "ISO 8601 (YYYY-MM-DD)", "us": "MM/DD/YYYY", "day-first": "DD/MM/YYYY"}.get(fmt, fmt)


AMBIGUOUS = "ambiguous"


def _strict(text: str, pattern: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(text) if pattern == "ISO8601" else datetime.strptime(text, pattern)
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: an offset pushing year 1 below the range
        return None


def parse_date(text: str, fmt: str | None) -> datetime | str | None:
    """One value by the declared format: a UTC datetime, :data:`AMBIGUOUS`, or None if it does not parse.

    This is the only date parser of the contract: the stream calls it per report and
    :func:`parse_dates` calls it once per distinct value of a column. Naive times are UTC.
    """
    text = text.strip()
    pattern = resolve_date_format(fmt)
    if pattern is not None:
        return _strict(text, pattern)
    when = _strict(text, "ISO8601")
    if when is not None:
        return when
    us, dm = _strict(text, _US), _strict(text, _DAY_FIRST)
    if us is not None and dm is not None and us != dm:
        return AMBIGUOUS
    return us or dm


def parse_dates(values: pd.Series, fmt: str | None) -> tuple[pd.Series, np.ndarray, np.ndarray]:
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


def to_days(values: pd.Series, fmt: str | None) -> tuple[pd.DatetimeIndex, np.ndarray, np.ndarray]:
    """Like :func:`parse_dates`, normalised to UTC midnight (the leaves of a date hierarchy)."""
    parsed, bad, ambiguous = parse_dates(values, fmt)
    return pd.DatetimeIndex(parsed).tz_convert("UTC").normalize(), bad, ambiguous


def not_whole(numbers: np.ndarray) -> np.ndarray:
    """Mask of finite values with a fractional part (refused by an integer hierarchy)."""
    return np.isfinite(numbers) & (np.floor(numbers) != numbers)


def missing_mask(values: pd.Series, tokens: Iterable[str] = ()) -> np.ndarray:
    """True where a value is missing: NA/None, empty after stripping, or one of the spec's tokens."""
    na = values.isna().to_numpy()
    text = values.astype(str).str.strip()
    words = NULL_TOKENS | {t.strip() for t in tokens}
    return na | text.isin(words).to_numpy()


@lru_cache(maxsize=64)
def _token_set(tokens: tuple[str, ...]) -> frozenset[str]:
    return NULL_TOKENS | {t.strip() for t in tokens}


def is_missing(value: object, tokens: Iterable[str] = ()) -> bool:
    """Scalar form of :func:`missing_mask` (used per report by the stream)."""
    if value is None or (isinstance(value, float) and value != value):
        return True
    return (value.strip() if isinstance(value, str) else str(value)) in _token_set(tuple(tokens))
