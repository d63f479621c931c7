"""Budget blocks: the (station, day), (feed, day) or whole-dataset parts a privacy budget is kept for.

Following Sage's block composition, every report belongs to exactly one block (by its own station,
or window key, and its own UTC day), each block has a lifetime cap, and a query spends on every block
it *declares*. The blocks a query charges are public: a stream release declares the days of its
windows, an ``aggregate`` run the stations and days its caller names; they are never read from the
rows (a row outside the declared blocks is not counted, and which rows those are is not published).
Whether a query has counts therefore never depends on one report.

Block keys are plain strings: ``station:S1/day:2026-11-20`` (a window key and a day: ``region:R/day:…``
when windows are by region), ``feed:default/day:2026-11-20`` or ``dataset:adult``. Days are UTC days.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from typing import Literal

import pandas as pd

from core.contract import DateFormat, parse_dates
from core.errors import InputDataError, ParamsError

BlockBy = Literal["station-day", "feed-day", "dataset"]
MAX_DAYS = 3_660  # ten years of days in one declared scope
MAX_BLOCKS = 200_000  # stations x days of one declared scope


def utc_days(values: pd.Series, column: str, fmt: DateFormat | None = None) -> pd.Series:
    """The UTC calendar day (``YYYY-MM-DD``) of each time, read by the spec's declared format (the input
    contract's parser); a time that does not parse is an input error."""
    if pd.api.types.is_datetime64_any_dtype(values):
        times = values.dt.tz_localize("UTC") if values.dt.tz is None else values.dt.tz_convert("UTC")
    else:
        times, _bad, _ambiguous = parse_dates(values, fmt)
    if times.isna().any():
        raise InputDataError(f"column '{column}': {int(times.isna().sum())} rows have no readable time")
    return times.dt.strftime("%Y-%m-%d")


def day_range(first: str, last: str) -> list[str]:
    """Every UTC day from ``first`` to ``last`` (``YYYY-MM-DD``, both included), for a declared scope."""
    try:
        lo, hi = date.fromisoformat(first.strip()), date.fromisoformat(last.strip())
    except ValueError:
        raise ParamsError(f"days must be YYYY-MM-DD (got {first!r} and {last!r})") from None
    if hi < lo:
        raise ParamsError(f"the last day {hi} is before the first {lo}")
    n = (hi - lo).days + 1
    if n > MAX_DAYS:
        raise ParamsError(f"{n:,} days declared; one query covers at most {MAX_DAYS:,}")
    return [(lo + timedelta(days=i)).isoformat() for i in range(n)]


def station_key(station: str) -> str:
    """The key of a station's blocks (the stream's window key of the station in the default feed)."""
    return f"station:{station}"


def declared_blocks(by: BlockBy, *, keys: Sequence[str] = (), days: Sequence[str] = (), feed: str = "default",
                    dataset: str = "dataset") -> list[str]:
    """The blocks of a declared scope, sorted (the order a ledger locks them in).

    ``keys`` are station keys (:func:`station_key`) or window keys, ``days`` UTC days: both come from
    the caller's declaration or the window, never from the rows."""
    if by == "dataset":
        return [f"dataset:{dataset}"]
    if not days:
        raise ParamsError(f"blocks by {by} need the declared days")
    if by == "feed-day":
        return sorted(f"feed:{feed}/day:{d}" for d in set(days))
    if not keys:
        raise ParamsError("blocks by station-day need the declared stations")
    if len(set(keys)) * len(set(days)) > MAX_BLOCKS:
        raise ParamsError(f"{len(set(keys)) * len(set(days)):,} blocks declared; one query charges at most "
                          f"{MAX_BLOCKS:,}")
    return sorted(f"{k}/day:{d}" for k in set(keys) for d in set(days))


def row_blocks(frame: pd.DataFrame, *, by: BlockBy = "station-day", station_column: str | None = None,
               date_column: str | None = None, feed: str = "default", dataset: str = "dataset",
               date_format: DateFormat | None = None, keys: pd.Series | None = None) -> pd.Series:
    """The block every row belongs to (a string Series aligned with ``frame``): its station's (or the
    given ``keys``') UTC day. Used only to tell which rows fall in a declared scope."""
    if by == "dataset":
        return pd.Series(f"dataset:{dataset}", index=frame.index, dtype=object)
    if date_column is None or date_column not in frame.columns:
        raise InputDataError(f"blocks by {by} need the time column '{date_column}' in the input")
    days = "day:" + utc_days(frame[date_column], date_column, date_format)
    if by == "feed-day":
        return (f"feed:{feed}/" + days).astype(object)
    if keys is None:
        if station_column is None or station_column not in frame.columns:
            raise InputDataError(f"blocks by station-day need the station column '{station_column}' in the input")
        keys = "station:" + frame[station_column].astype(str).str.strip()
    return (keys.astype(str) + "/" + days).astype(object)
