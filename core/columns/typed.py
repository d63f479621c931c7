"""The published table of a release: each QI label followed by its typed columns.

Column order, fixed by the spec (never by the data): per QI, in spec order, the label then its typed
columns (:mod:`core.columns.interpret`); the sensitive column; the pass-through columns;
``suppressed``; then the context columns the caller passes: the event dates ``event_date_lo`` /
``event_date_hi`` (per equivalence class or per row, :mod:`core.columns.dates`) and the window key
``station_id`` / ``region`` (the same for every row of a release).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.codes import Codes, TableCodes, attach, carried
from core.columns.base import label_codes
from core.columns.dates import EVENT_DATES, event_date_columns
from core.columns.interpret import Column, Interpreter, interpreter
from core.encoding import Schema
from core.errors import SpecError
from core.hierarchies import TOP

CLASS_ID = Column("class_id", "integer", "equivalence class of the row within this release: rows with the same "
                  "class_id share every QI label (a k-regular release numbers each row)")
SUPPRESSED = Column("suppressed", "boolean", "true when every QI of the row is * (the row says nothing about its "
                    "quasi-identifiers); rows suppressed by the engine are not published, only counted")
CONTEXT: dict[str, Column] = {  # the window key; the event dates' meaning depends on the spec (core.columns.dates)
    "station_id": Column("station_id", "string", "the station whose window released the record (windows per "
                         "station)"),
    "region": Column("region", "string", "the region whose window released the record (windows per region)"),
}


def interpreters(schema: Schema) -> list[Interpreter]:
    """One interpreter per QI, in spec order."""
    return [interpreter(q, schema.hierarchies[q.name]) for q in schema.spec.qi]


def release_columns(schema: Schema, context: list[str] | tuple[str, ...] = ()) -> list[Column]:
    """Every column of a published release (without ``class_id``), in order, with type and meaning.

    Raises :class:`SpecError` when a generated name (``age_lo`` ...) collides with another column."""
    spec = schema.spec
    cols: list[Column] = []
    for interp in interpreters(schema):
        cols.append(Column(interp.name, "string", interp.label_meaning()))
        cols.extend(interp.columns())
    if spec.sensitive:
        cols.append(Column(spec.sensitive.name, "string", "sensitive attribute, published unchanged"))
    cols.extend(Column(c, "string", "pass-through column, published unchanged") for c in spec.passthrough)
    cols.append(SUPPRESSED)
    dates = {c.name: c for c in event_date_columns(schema)} if set(context) & set(EVENT_DATES) else {}
    cols.extend(dates[c] if c in dates else CONTEXT[c] for c in context)
    names = [c.name for c in cols]
    dup = sorted({n for n in names if names.count(n) > 1} | ({CLASS_ID.name} & set(names)))
    if dup:
        raise SpecError(f"published column name(s) {dup} collide: rename the column or set level_names in the spec")
    return cols


def typed_columns(rows: pd.DataFrame, schema: Schema, context: dict[str, Any] | None = None) -> pd.DataFrame:
    """The published table of released ``rows`` (labels as the engine wrote them; same index).

    ``context`` maps context column names (see :data:`CONTEXT`) to their value: one for the whole release
    (the window key), or a sequence with one value per row of ``rows`` (the event dates)."""
    context = context or {}
    spec = schema.spec
    parts: list[pd.DataFrame | pd.Series] = []
    top = pd.Series(True, index=rows.index)
    carry: dict[str, Codes] = {}  # the table carries the codes of its labels and of the columns passed on
    for interp in interpreters(schema):
        got = carried(rows, interp.name)
        column = rows[interp.name]
        clean = got is not None and got.clean
        if got is not None and clean:  # label_codes of text labels: their codes, as the rows carry them
            codes, texts = got.codes, list(got.uniques)
            carry[interp.name] = got
        else:
            codes, texts = label_codes(column)
        # clean text labels are their own texts: the rows' column itself, not a copy of it
        labels = (column if clean and column.dtype == object
                  else pd.Series(np.asarray(texts, dtype=object)[codes], index=rows.index, name=interp.name))
        parts.append(labels)
        parts.append(interp.frame(labels, (codes, texts)))
        top &= np.asarray([t == TOP for t in texts], dtype=bool)[codes]
    for col in ([spec.sensitive.name] if spec.sensitive else []) + list(spec.passthrough):
        parts.append(rows[col].rename(col))
        if (got := carried(rows, col)) is not None:
            carry[col] = got
    parts.append(top.astype("boolean").rename(SUPPRESSED.name))
    for name, value in context.items():
        dtype = "string"  # ISO days and keys: every context column is text
        per_row = isinstance(value, list | tuple | np.ndarray | pd.Series)
        if per_row and len(value) != len(rows):
            raise ValueError(f"context column {name!r}: {len(value)} values for {len(rows)} rows")
        values = list(value) if per_row else [value] * len(rows)
        parts.append(pd.Series(values, index=rows.index, name=name, dtype=dtype))
    expected = [c.name for c in release_columns(schema, list(context))]
    series = {s.name: s for p in parts for s in ([p[c] for c in p.columns] if isinstance(p, pd.DataFrame) else [p])}
    if not series:
        return pd.DataFrame(index=rows.index)[expected]
    # the columns side by side, in the published order: no copy into one block, no copy to reorder
    table = pd.concat([series[name] for name in expected], axis=1, copy=False)
    return attach(table, TableCodes(table.index, carry)) if carry and table.index.equals(rows.index) else table
