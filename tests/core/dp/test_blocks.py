"""Budget blocks: station-day, feed-day or the whole data set, on UTC days."""

from __future__ import annotations

import pandas as pd
import pytest

from core.dp.blocks import block_keys, row_blocks
from core.errors import InputDataError


def test_station_day_feed_day_and_dataset() -> None:
    times = ["2026-11-20T23:30:00+00:00", "2026-11-20T10:00:00Z", "2026-11-21T00:30:00+02:00"]
    frame = pd.DataFrame({"station_id": ["S1", "S2", "S1"], "event_time": times})
    assert block_keys(frame, station_column="station_id", date_column="event_time") == [
        "station:S1/day:2026-11-20", "station:S2/day:2026-11-20"]  # 00:30+02:00 is the 20th in UTC
    assert block_keys(frame, by="feed-day", date_column="event_time", feed="north") == ["feed:north/day:2026-11-20"]
    assert row_blocks(frame, by="dataset", dataset="adult").tolist() == ["dataset:adult"] * 3


def test_us_dates_and_bad_times() -> None:
    frame = pd.DataFrame({"p": ["100"], "d": ["11/20/2026"]})
    assert block_keys(frame, station_column="p", date_column="d", date_format="us") == ["station:100/day:2026-11-20"]
    with pytest.raises(InputDataError, match="readable time"):
        block_keys(pd.DataFrame({"p": ["1"], "d": ["soon"]}), station_column="p", date_column="d")
    with pytest.raises(InputDataError, match="station column"):
        block_keys(frame, date_column="d", date_format="us")
