"""A feed's window policy: how its reports are grouped into windows and when a window closes.

Kept apart from the window router (:mod:`db.windows`) so that the settings, which declare it, load
neither SQLAlchemy nor the models (a command that never opens the ledger starts sooner).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class WindowPolicy(BaseModel):
    """How a feed's reports are grouped into windows and when a window closes: the one declaration of
    these settings (``Settings.windows``, a feed's ``windows`` table, ``ANONSTREAM_WINDOWS__*``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    by: Literal["station", "region", "global"] = Field(
        default="station", description="window key: one window series per station, per region (see regions) or "
        "one for all")
    size_s: int = Field(default=86_400, ge=1, description="length of a tumbling window, by event time")
    lateness_s: int = Field(default=3_600, ge=0, description="a window is due once its key's watermark (latest "
                            "event time seen) passes its end by this much")
    cap: int = Field(default=10_000, ge=1, description="a window with this many reports is due; more reports of "
                     "its period open the next window of the period")
    idle_timeout_s: float = Field(default=60.0, gt=0, description="close a window after this long without input "
                                  "(only input without batch markers: a push's windows close when its batch "
                                  "ends, however slowly it arrives)")
    max_new_windows_per_hour: int = Field(default=500, ge=1, description="windows a key (station) may open per "
                                          "hour; reports needing more are dead-lettered as window-rate")
    max_backfill_windows: int = Field(default=3_660, ge=0, description="windows one push (batch) of a station an "
                                      "operator registered before the push may open, instead of the hourly bound: "
                                      "a catch-up export of its history (0 = none)")
    min_release_rows: int | None = Field(default=None, ge=1, description="a window with fewer reports to "
                                         "release is carried into the next window of its key, not published "
                                         "(`anonstream windows flush` releases it now); none = 10 x privacy.k")
    merge_batch: bool = Field(default=True, description="release the windows one push completes together, in "
                              "event-time order, at most cap reports per release (false: each window on its own)")
    feed: str = Field(default="default", description="the feed whose windows these are (the settings' feed; "
                      "not an operator setting)")

    def release_floor(self, k: int) -> int:
        """The fewest reports a release of these windows may publish (``min_release_rows``, at least k)."""
        return max(k, 1, self.min_release_rows if self.min_release_rows is not None else 10 * k)

    def start_of(self, t: datetime) -> datetime:
        epoch = int(t.timestamp())
        return datetime.fromtimestamp(epoch - epoch % self.size_s, t.tzinfo)

    def window_id(self, key: str, start: datetime, seq: int) -> str:
        return f"{key}|{start.strftime('%Y-%m-%dT%H:%M:%SZ')}|{seq}"
