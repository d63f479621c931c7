"""Budget blocks: declared (station x day, feed x day, the whole data set), never read from the rows;
each row's own block, on UTC days, only tells whether it falls in a declared scope."""

from __future__ import annotations

import pandas as pd
import pytest

from core.dp.blocks import MAX_DAYS, day_range, declared_blocks, row_blocks, station_key
from core.errors import InputDataError, ParamsError


def test_declared_blocks_come_from_the_declaration_only() -> None:
    days = day_range("2026-11-19", "2026-11-20")
    assert days == ["2026-11-19", "2026-11-20"]
    assert declared_blocks("station-day", keys=[station_key("S2"), station_key("S1")], days=days) == [
        "station:S1/day:2026-11-19", "station:S1/day:2026-11-20",
        "station:S2/day:2026-11-19", "station:S2/day:2026-11-20"]
    assert declared_blocks("feed-day", days=days, feed="north") == ["feed:north/day:2026-11-19",
                                                                   "feed:north/day:2026-11-20"]
    assert declared_blocks("dataset", dataset="adult") == ["dataset:adult"]
    with pytest.raises(ParamsError, match="declared stations"):
        declared_blocks("station-day", days=days)
    with pytest.raises(ParamsError, match="declared days"):
        declared_blocks("feed-day")


def test_day_ranges_are_checked() -> None:
    assert day_range("2026-01-05", "2026-01-05") == ["2026-01-05"]
    with pytest.raises(ParamsError, match="before the first"):
        day_range("2026-01-05", "2026-01-04")
    with pytest.raises(ParamsError, match="YYYY-MM-DD"):
        day_range("05/01/2026", "2026-01-04")
    with pytest.raises(ParamsError, match=f"at most {MAX_DAYS:,}"):
        day_range("1990-01-01", "2026-01-01")


def test_each_row_belongs_to_its_own_station_day() -> None:
    times = ["2026-11-20T23:30:00+00:00", "2026-11-20T10:00:00Z", "2026-11-21T00:30:00+02:00"]
    frame = pd.DataFrame({"station_id": ["S1", "S2", "S1"], "event_time": times})
    assert row_blocks(frame, station_column="station_id", date_column="event_time").tolist() == [
        "station:S1/day:2026-11-20", "station:S2/day:2026-11-20", "station:S1/day:2026-11-20"]  # UTC days
    assert row_blocks(frame, by="feed-day", date_column="event_time", feed="north").tolist() == [
        "feed:north/day:2026-11-20"] * 3
    assert row_blocks(frame, by="dataset", dataset="adult").tolist() == ["dataset:adult"] * 3
    keys = pd.Series(["region:N"] * 3)
    assert row_blocks(frame, date_column="event_time", keys=keys).tolist() == ["region:N/day:2026-11-20"] * 3


def test_us_dates_and_bad_times() -> None:
    frame = pd.DataFrame({"p": ["100"], "d": ["11/20/2026"]})
    assert row_blocks(frame, station_column="p", date_column="d", date_format="us").tolist() == [
        "station:100/day:2026-11-20"]
    with pytest.raises(InputDataError, match="readable time"):
        row_blocks(pd.DataFrame({"p": ["1"], "d": ["soon"]}), station_column="p", date_column="d")
    with pytest.raises(InputDataError, match="station column"):
        row_blocks(frame, date_column="d", date_format="us")
