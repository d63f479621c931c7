"""Reports per day from released rows, as bounds the rows can defend.

A released row carries ``event_date_lo`` / ``event_date_hi``: the first and last event day of its
equivalence class, or its own date QI's period (docs/stream.md, "Release columns"). A row whose span
is one day is a report of that day; a row spanning several days is a report of one of them, which
one the release does not say. So per day:

* ``at_least``: rows whose span is that day alone (they are that day's reports);
* ``at_most``: rows whose span covers that day (every report of that day is among them).

The true number of released reports of a day lies between the two. Never spread the wider rows over
their days: that would state counts the release does not hold.

    >>> from stream.analyst import day_counts, read_releases
    >>> days = day_counts(read_releases("releases/"))
    >>> days.loc["2021-03-01"]        # at_least, at_most
"""

from __future__ import annotations

import pandas as pd

LO, HI = "event_date_lo", "event_date_hi"


def day_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Per day from the first to the last day any row spans (empty days included): ``at_least`` (rows
    dated that day alone) and ``at_most`` (rows whose span covers it). Rows without a span are left out."""
    missing = [c for c in (LO, HI) if c not in df.columns]
    if missing:
        raise ValueError(f"no column(s) {missing} in the data: releases made before event date spans, or a spec "
                         "whose publish_context leaves event_date out")
    lo = pd.to_datetime(df[LO], errors="coerce").dt.normalize()
    hi = pd.to_datetime(df[HI], errors="coerce").dt.normalize()
    known = lo.notna() & hi.notna()
    lo, hi = lo[known], hi[known]
    if lo.empty:
        return pd.DataFrame({"at_least": pd.Series(dtype="int64"), "at_most": pd.Series(dtype="int64")})
    days = pd.date_range(lo.min(), hi.max(), freq="D")
    alone = lo[lo == hi].value_counts().reindex(days, fill_value=0)
    starts = lo.value_counts().reindex(days, fill_value=0).cumsum()  # rows begun by each day
    ends = (hi + pd.Timedelta(days=1)).value_counts().reindex(days, fill_value=0).cumsum()  # rows ended before it
    out = pd.DataFrame({"at_least": alone.to_numpy(), "at_most": (starts - ends).to_numpy()},
                       index=pd.Index(days.date, name="day"))
    return out.astype("int64")
