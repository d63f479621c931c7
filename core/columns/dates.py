"""The event dates a released row carries: ``event_date_lo`` / ``event_date_hi``, true of its report.

A released row never carries a date its report does not have. Which span it carries depends on the
spec (docs/stream.md, "Release columns"):

* the time column is a date QI (the bundled ``nypd`` spec's ``ARREST_DATE``): the row's own date as
  the engine generalised it, the first and last day of its label's period (the QI's ``_start`` /
  ``_end``); a row whose date label is ``*`` carries the release's span instead (which the manifest
  publishes anyway), so it says no more than ``*`` does;
* otherwise the date is no QI, and an exact day per row would be a new quasi-identifier: a row carries
  the first and last event day of its **equivalence class**, the released rows that share every QI
  label with it (what the verifier and an attacker group by), when that class has at least ``k`` rows;
  rows of a smaller label group (k-regular releases of ``ils``, ``kmember``, ``lgreedy`` may have some)
  carry the release's span. Every row of a class carries the same span, so the columns split no class.

Either way the span covers the row's own event day, so the rows whose span covers a day number at
least the reports of that day (per day counts are bounded from both sides:
:func:`stream.analyst.day_counts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

import numpy as np
import pandas as pd

from core.columns.base import Column, label_codes
from core.columns.interpret import DateInterpreter, interpreter
from core.encoding import Schema
from core.schema import QIType

EVENT_DATE_LO = "event_date_lo"
EVENT_DATE_HI = "event_date_hi"
EVENT_DATES = (EVENT_DATE_LO, EVENT_DATE_HI)
_CLASS = ("{which} day (UTC) of the events of this row's equivalence class (the released rows sharing "
          "every QI label with it), included; rows of a label group smaller than k carry the release's span "
          "(the manifest's event_time); null when an event time of the group is unknown (batch input)")
_QI = ("{which} day (UTC) of the row's own event date as released in '{qi}' (its label's period, as "
       "{qi}_{end}); a row whose '{qi}' is * carries the release's span (the manifest's event_time)")


def date_qi(schema: Schema) -> str | None:
    """The QI that is the spec's time column, when it is a date QI (its label is then the row's date)."""
    spec = schema.spec
    time_col = spec.time_column or "event_time"
    return next((q.name for q in spec.qi if q.name == time_col and q.type == QIType.DATE), None)


def event_date_columns(schema: Schema) -> list[Column]:
    """The two columns with their meaning for this spec."""
    qi = date_qi(schema)
    if qi is not None:
        return [Column(EVENT_DATE_LO, "date", _QI.format(which="first", qi=qi, end="start")),
                Column(EVENT_DATE_HI, "date", _QI.format(which="last", qi=qi, end="end"))]
    return [Column(EVENT_DATE_LO, "date", _CLASS.format(which="first")),
            Column(EVENT_DATE_HI, "date", _CLASS.format(which="last"))]


def event_days(times: Sequence[datetime | date | str | None] | pd.Series) -> np.ndarray:
    """UTC days (``datetime64[D]``) of event times (aware, naive = UTC, or ISO text); NaT where missing."""
    stamps = pd.to_datetime(pd.Series(list(times) if not isinstance(times, pd.Series) else times, dtype=object),
                            utc=True, errors="coerce", format="mixed")
    return stamps.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy().astype("datetime64[D]")


def day_span(days: np.ndarray) -> tuple[str | None, str | None]:
    """First and last day of ``days`` as ISO dates (None, None when there is no day)."""
    known = days[~np.isnat(days)]
    if not len(known):
        return None, None
    return str(known.min()), str(known.max())


def event_date_spans(rows: pd.DataFrame, days: np.ndarray, schema: Schema, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``event_date_lo`` and ``event_date_hi`` (ISO text, object arrays) of released ``rows``.

    ``rows`` holds the labels as the engine released them; ``days`` is each row's event day (in the
    order of ``rows``); ``k`` the release's k: label groups with fewer rows carry the release's span."""
    if len(days) != len(rows):
        raise ValueError(f"{len(days)} event days for {len(rows)} released rows")
    first, last = day_span(days)
    lo = np.full(len(rows), first, dtype=object)
    hi = np.full(len(rows), last, dtype=object)
    if not len(rows) or first is None:
        return lo, hi
    qi = date_qi(schema)
    if qi is not None:
        interp = interpreter(schema.spec.qi_spec(qi), schema.hierarchies[qi])
        assert isinstance(interp, DateInterpreter)
        period = interp.frame(rows[qi])
        start, end = period[f"{qi}_start"], period[f"{qi}_end"]
        known = start.notna().to_numpy() & end.notna().to_numpy()
        lo[known] = start[known].astype(str).to_numpy()
        hi[known] = end[known].astype(str).to_numpy()
        return lo, hi
    codes = [label_codes(rows[q.name])[0] for q in schema.spec.qi]
    group = pd.Series(np.zeros(len(rows), dtype=np.int64)) if not codes else \
        pd.DataFrame(np.column_stack(codes)).groupby(list(range(len(codes))), sort=False).ngroup()
    day = pd.Series(days.astype("datetime64[ns]"))
    by = day.groupby(group.to_numpy(), sort=False)
    g_lo, g_hi = by.transform("min"), by.transform("max")
    complete = (by.transform("count") == by.transform("size")).to_numpy()  # no unknown day in the group
    own = (by.transform("size") >= max(int(k), 1)).to_numpy() & complete
    lo[own] = g_lo[own].dt.strftime("%Y-%m-%d").to_numpy()
    hi[own] = g_hi[own].dt.strftime("%Y-%m-%d").to_numpy()
    lo[~complete] = hi[~complete] = None
    return lo, hi
