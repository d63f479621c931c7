"""The event dates of a batch release (``anonstream anonymize``), as the stream publishes them.

A file has no windows: each released row carries ``event_date_lo`` / ``event_date_hi``, the span of
its equivalence class's event days (or its own date QI's period), computed by
:func:`core.columns.event_date_spans` from the spec's time column, and the report states the
released rows' first and last event day. A file without the time column (Adult, a census extract), or a
spec whose ``publish_context`` leaves ``event_date`` out, gets neither.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core import contract
from core.columns import EVENT_DATES, day_span, event_date_spans
from core.encoding import Schema


def batch_event_dates(schema: Schema, frame: pd.DataFrame, release: Any) -> tuple[dict[str, np.ndarray],
                                                                                   tuple[str | None, str | None]]:
    """The context columns (``{"event_date_lo": ..., "event_date_hi": ...}``, one value per released row,
    in the order of ``release.rows``) and the released rows' first and last event day (ISO); nothing
    when the file has no time column or the spec does not publish event dates."""
    spec = schema.spec
    column = spec.time_column or "event_time"
    if "event_date" not in spec.publish_context or column not in frame.columns:
        return {}, (None, None)
    values = frame[column].loc[release.rows.index]
    parsed, _bad, _ambiguous = contract.parse_dates(values.astype(object).where(values.notna(), ""),
                                                    spec.date_format(column))
    days = pd.DatetimeIndex(parsed).tz_convert("UTC").tz_localize(None).to_numpy().astype("datetime64[D]")
    lo, hi = event_date_spans(release.rows, days, schema, release.requirement.k)
    return dict(zip(EVENT_DATES, (lo, hi), strict=True)), day_span(days)
