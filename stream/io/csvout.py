"""Write a release table as CSV, formatting each distinct value once.

A released table repeats few distinct rows (generalized labels, each class's rows alike) and each
column few distinct values, so :func:`write_csv` has pandas format each column's distinct values of
the distinct rows only, and writes the lines in the table's order: the bytes are those of
``frame.to_csv(path, index=False)``, at a fraction of the cost. A table whose text holds line breaks
is written by pandas directly.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

_DISTINCT_SHARE = 0.5  # above this share of distinct rows, formatting them all is as cheap
_CHUNK = 50_000  # lines per write


def row_ids(frame: pd.DataFrame) -> np.ndarray:
    """Per row, the id (0..m-1, by first appearance) of its distinct row; missing values are equal."""
    ids = np.zeros(len(frame), dtype=np.int64)
    for col in range(frame.shape[1]):
        codes, size = value_codes(frame.iloc[:, col])
        ids = pd.factorize(ids * (size + 1) + (codes + 1))[0].astype(np.int64)
    return ids


def value_codes(column: pd.Series) -> tuple[np.ndarray, int]:
    """Codes of a column's distinct values (-1: missing) and how many there are; values of an object
    column that hash alike but are written differently (1, 1.0, True) get different codes."""
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    if column.dtype == object and not all(type(u) is str for u in uniques):
        typed = [None if v is None or v is pd.NA or v != v else (type(v), v) for v in column.to_numpy()]
        codes, uniques = pd.factorize(pd.Series(typed, dtype=object), use_na_sentinel=True)
    return codes, len(uniques)


def write_csv(frame: pd.DataFrame, path: str | Path, ids: np.ndarray | None = None,
              prepare: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
              order: np.ndarray | None = None) -> None:
    """``prepare(frame.iloc[order]).to_csv(path, index=False)``, byte for byte, formatting each distinct
    row once.

    ``ids``: the rows' distinct-row ids if known (:func:`row_ids`, in ``frame`` order; equal ids must
    mean equal rows). ``prepare``: a row-wise rewrite (e.g. :func:`stream.wire.csvsafe.neutralize_frame`),
    applied to the distinct rows only. ``order``: row positions to write (None: as they are)."""
    prepare = prepare or (lambda f: f)
    ids = row_ids(frame) if ids is None else ids
    distinct = int(ids.max()) + 1 if len(ids) else 0
    if not len(frame):
        _whole(frame, path, prepare, order)
        return
    if distinct > _DISTINCT_SHARE * len(frame):  # mostly distinct rows: format each column's distinct cells
        heads, seq = prepare(frame), (np.arange(len(frame)) if order is None else order)
    else:
        first = np.unique(ids, return_index=True)[1]
        heads, seq = prepare(frame.iloc[first]), (ids if order is None else ids[order])
    if _has_line_breaks(heads):
        _whole(frame, path, prepare, order)
        return
    end = os.linesep
    body = _lines(heads)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(heads.iloc[:0].to_csv(index=False, lineterminator=end))
        for start in range(0, len(seq), _CHUNK):  # chunks: the file's text is never held whole
            fh.write(end.join(body[seq[start:start + _CHUNK]].tolist()) + end)


def _lines(frame: pd.DataFrame) -> np.ndarray:
    """Each row's CSV line (no line end) as pandas writes it, each column's distinct cells formatted
    once by pandas itself (beside a constant column, so an empty text is not quoted as a lone field)."""
    lines: np.ndarray | None = None
    for col in frame.columns:
        values = frame[col]
        codes, _ = value_codes(values)
        present, where = np.unique(codes, return_index=True)
        reps = values.iloc[where[present >= 0]].reset_index(drop=True)  # one row per distinct value
        probe = pd.DataFrame({"v": reps, "z": 0})
        text = probe.to_csv(index=False, header=False, lineterminator="\n").split("\n")[:-1]
        cells = np.asarray([t[:-2] for t in text] + [""], dtype=object)[codes]  # code -1 (missing): empty
        lines = cells if lines is None else lines + "," + cells
    return lines if lines is not None else np.full(len(frame), "", dtype=object)


def _whole(frame: pd.DataFrame, path: str | Path, prepare: Callable[[pd.DataFrame], pd.DataFrame],
           order: np.ndarray | None) -> None:
    prepare(frame if order is None else frame.iloc[order]).to_csv(path, index=False)


def _has_line_breaks(frame: pd.DataFrame) -> bool:
    """True if a text cell holds a line break (judged once per distinct value)."""
    for col in frame.columns:
        values = frame[col]
        if values.dtype == object or isinstance(values.dtype, pd.StringDtype):
            uniques = pd.unique(values.dropna().to_numpy(dtype=object))
            if any("\n" in v or "\r" in v for v in map(str, uniques)):
                return True
    return False
