"""Budget blocks: the (station, day), (feed, day) or whole-dataset parts a privacy budget is kept for.

Following Sage's block composition, every report belongs to exactly one block, each block has a
lifetime cap, and a query spends on every block its rows fall in. Block keys are plain strings:
``station:S1/day:2026-11-20``, ``feed:default/day:2026-11-20`` or ``dataset:adult``. Days are UTC days.
"""

from __future__ import annotations

from typing import Literal

import pandas as pd

from core.contract import DateFormat, parse_dates
from core.errors import InputDataError

BlockBy = Literal["station-day", "feed-day", "dataset"]


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


def row_blocks(frame: pd.DataFrame, *, by: BlockBy = "station-day", station_column: str | None = None,
               date_column: str | None = None, feed: str = "default", dataset: str = "dataset",
               date_format: DateFormat | None = None) -> pd.Series:
    """The block of every row (a string Series aligned with ``frame``)."""
    if by == "dataset":
        return pd.Series(f"dataset:{dataset}", index=frame.index, dtype=object)
    if date_column is None or date_column not in frame.columns:
        raise InputDataError(f"blocks by {by} need the time column '{date_column}' in the input")
    days = "day:" + utc_days(frame[date_column], date_column, date_format)
    if by == "feed-day":
        return (f"feed:{feed}/" + days).astype(object)
    if station_column is None or station_column not in frame.columns:
        raise InputDataError(f"blocks by station-day need the station column '{station_column}' in the input")
    return ("station:" + frame[station_column].astype(str) + "/" + days).astype(object)


def block_keys(frame: pd.DataFrame, *, by: BlockBy = "station-day", station_column: str | None = None,
               date_column: str | None = None, feed: str = "default", dataset: str = "dataset",
               date_format: DateFormat | None = None) -> list[str]:
    """The blocks a set of rows falls in, sorted (the order a ledger locks them in)."""
    blocks = row_blocks(frame, by=by, station_column=station_column, date_column=date_column, feed=feed,
                        dataset=dataset, date_format=date_format)
    return sorted(set(blocks.tolist()))
