"""Column types of released data, shared by the writers (:mod:`stream.analyst.export`) and the reader
(:mod:`stream.analyst.dataset`): a released column becomes the narrowest of ``boolean``, ``Int64``, ``float64``,
``datetime64`` (ISO dates and times, UTC) and ``string`` that holds every non-null value.

Values arrive as JSON values (records on the topic, Parquet, JSON lines) or as text (CSV). Text is only
read as a number when every value of the column is one written the way a number is written: no sign
character other than a leading ``-``, no leading zero (so ``0123`` stays text), no spaces.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

_INT = re.compile(r"-?(0|[1-9][0-9]*)")
_FLOAT = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DATETIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?"
                       r"(Z|[+-][0-9]{2}:?[0-9]{2})?")


def _kind(value: Any, from_text: bool) -> str:
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, int | np.integer):
        return "int"
    if isinstance(value, float | np.floating):
        return "float"
    if isinstance(value, pd.Timestamp):
        return "datetime" if value.tzinfo is not None else "date"
    text = str(value)
    if from_text and _INT.fullmatch(text):
        return "int"
    if from_text and _FLOAT.fullmatch(text):
        return "float"
    if from_text and text in ("True", "False", "true", "false"):
        return "bool"
    if _DATE.fullmatch(text):
        return "date"
    if _DATETIME.fullmatch(text):
        return "datetime"
    return "str"


def typed_column(series: pd.Series, from_text: bool = False) -> pd.Series:
    """``series`` (any dtype, values as JSON or text) as the narrowest type that holds all its values."""
    if isinstance(series.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_any_dtype(series.dtype):
        return series
    if series.dtype.kind in "iufb" and not from_text:
        return series.astype("boolean" if series.dtype.kind == "b" else
                             "Int64" if series.dtype.kind in "iu" else "float64")
    present = series[series.notna()]
    kinds = {_kind(v, from_text) for v in pd.unique(present.to_numpy(dtype=object))}
    if not kinds:
        return series.astype("string")
    if kinds == {"bool"}:
        return series.map(lambda v: v if pd.isna(v) or isinstance(v, bool) else str(v).lower() == "true",
                          na_action="ignore").astype("boolean")
    if kinds == {"int"}:
        return pd.to_numeric(series, errors="raise").astype("Int64")
    if kinds <= {"int", "float"}:
        return pd.to_numeric(series, errors="raise").astype("float64")
    if kinds <= {"date", "datetime"}:
        out = pd.to_datetime(series, utc=True, format="ISO8601")
        return out.dt.tz_localize(None) if kinds == {"date"} else out
    return series.map(str, na_action="ignore").astype("string")


def typed_frame(frame: pd.DataFrame, from_text: bool = False) -> pd.DataFrame:
    """Every column of ``frame`` through :func:`typed_column`."""
    return pd.DataFrame({c: typed_column(frame[c], from_text) for c in frame.columns}, index=frame.index)


def release_frame(manifest: dict[str, Any], records: list[dict[str, Any]]) -> pd.DataFrame:
    """The records of one release as a typed frame: ``class_id`` first, then the manifest's columns."""
    cols = [str(c) for c in manifest["columns"] if c != "class_id"]
    data: dict[str, list[Any]] = {"class_id": [r.get("class_id") for r in records]}
    for c in cols:
        data[c] = [r["values"].get(c) for r in records]
    return typed_frame(pd.DataFrame(data, dtype=object))
