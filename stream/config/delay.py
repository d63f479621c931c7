"""Delay-bounded releases (``Settings.delay``, ``ANONSTREAM_DELAY__*``): CASTLE instead of windows.

With ``enabled`` the worker does not release windows: every accepted report of a window key (``windows.by``:
a station, a region or the whole feed) enters that key's CASTLE stream (:mod:`core.engines.castle`) and leaves
at most ``tuples`` reports after it arrived, or once the key's event time is ``seconds`` past it, in a cluster
of at least k distinct persons and l distinct offences, or suppressed with a counted reason
(:mod:`stream.worker.delay`, docs/stream.md "Delay-bounded releases (CASTLE)").
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DelayPolicy(BaseModel):
    """How long a report may wait in delay mode, in event seconds and in reports of its key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(default=False, description="release by delay (CASTLE) instead of by window: each report "
                          "leaves within `seconds` of event time and `tuples` reports of its key")
    seconds: float = Field(default=3600.0, gt=0, description="most event seconds a report waits (its key's event "
                           "time: the newest report's, advancing with the wall clock between arrivals)")
    tuples: int = Field(default=500, ge=2, description="most reports of its key that arrive after a report before "
                        "it leaves (CASTLE's delta)")
    mu: int = Field(default=100, ge=1, description="CASTLE's mu: tau is the mean loss of the last mu clusters")
