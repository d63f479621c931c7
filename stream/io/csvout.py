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
from typing import Any

import numpy as np
import pandas as pd

from core.codes import Codes, carried, class_key

_DISTINCT_SHARE = 0.5  # above this share of distinct rows, formatting them all is as cheap
_CHUNK = 10_000  # lines per write (and per joined block): 10k lines keep the writer within ~10 MiB


def row_ids(frame: pd.DataFrame, columns: list[str] | None = None) -> np.ndarray:
    """Per row, the id (0..m-1, by first appearance) of its distinct row over ``columns`` (default:
    all, by position); missing values are equal. Codes the frame carries are used (:mod:`core.codes`)."""
    names = list(frame.columns) if columns is None else columns
    if columns is None and len(set(names)) < len(names):  # a name twice: by position, never carried
        return class_key((value_codes(frame.iloc[:, j]) for j in range(frame.shape[1])), len(frame))
    return class_key((_column_codes(frame, col) for col in names), len(frame))


def _column_codes(frame: pd.DataFrame, col: str) -> tuple[np.ndarray, int]:
    """:func:`value_codes` of ``frame[col]``, from the codes the frame carries when they are the same."""
    got = carried(frame, col)
    if got is not None and (got.text or not got.size or frame[col].dtype != object):
        return got.codes, got.size
    return value_codes(frame[col])


def value_codes(column: pd.Series, coded: Codes | None = None) -> tuple[np.ndarray, int]:
    """Codes of a column's distinct values (-1: missing) and how many there are; values of an object
    column that hash alike but are written differently (1, 1.0, True) get different codes. ``coded``: the
    column's :class:`core.codes.Codes`, if known."""
    codes, uniques = (coded.codes, coded.uniques) if coded is not None else pd.factorize(column, use_na_sentinel=True)
    if column.dtype == object and len(uniques) and not _all_text(uniques):
        typed = [None if v is None or v is pd.NA or v != v else (type(v), v) for v in column.to_numpy()]
        codes, uniques = pd.factorize(pd.Series(typed, dtype=object), use_na_sentinel=True)
    return codes, len(uniques)


def write_csv(frame: pd.DataFrame, path: str | Path, ids: np.ndarray | None = None,
              prepare: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
              order: np.ndarray | None = None) -> None:
    """``prepare(frame.iloc[order]).to_csv(path, index=False)``, byte for byte, formatting each distinct
    row once.

    ``ids``: the rows' distinct-row ids if known (:func:`row_ids`, in ``frame`` order; equal ids must
    mean equal rows). ``prepare``: a row-wise rewrite (e.g. :func:`stream.io.csvsafe.neutralize_frame`),
    applied to the distinct rows only. ``order``: row positions to write (None: as they are)."""
    prepare = prepare or (lambda f: f)
    if not len(frame):
        _whole(frame, path, prepare, order)
        return
    if ids is None:
        ids = row_ids(frame)
    few = int(ids.max()) + 1 <= _DISTINCT_SHARE * len(frame)
    if few:  # format the distinct rows only
        first = np.unique(ids, return_index=True)[1]
        heads, seq = prepare(frame.iloc[first]), (ids if order is None else ids[order])
    else:  # mostly distinct rows: format each column's distinct cells
        heads, seq = prepare(frame), (np.arange(len(frame)) if order is None else order)
    import pyarrow as pa

    columns = [_cells(heads[col], carried(heads, col)) for col in heads.columns]  # codes carried, if any
    if any(c is None for c in columns):  # a text cell holds a line break
        _whole(frame, path, prepare, order)
        return
    end = os.linesep
    header = heads.iloc[:0].to_csv(index=False, lineterminator=end)
    n_heads = len(heads)
    del heads
    # few distinct rows: each one's line is joined once, then the lines are taken in order; mostly
    # distinct rows: the lines are joined chunk by chunk in the order they are written, never all held
    body = _lines(columns, np.arange(n_heads), end) if few else None
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(header)
        fh.flush()
        for start in range(0, len(seq), _CHUNK):  # chunks: the file's text is never held whole
            chunk = seq[start:start + _CHUNK]
            text = body.take(pa.array(chunk)) if body is not None else _lines(columns, chunk, end)
            offsets = np.frombuffer(text.buffers()[1], dtype=np.int64)[text.offset:text.offset + len(text) + 1]
            fh.buffer.write(bytes(memoryview(text.buffers()[2])[int(offsets[0]):int(offsets[-1])]))


def _lines(columns: list[Any], positions: np.ndarray, end: str) -> Any:
    """The lines (each with its ``end``) of the rows at ``positions`` of the cells of :func:`_cells`,
    joined by pyarrow ``_CHUNK`` rows at a time."""
    import pyarrow as pa
    import pyarrow.compute as pc

    comma, blank, sep = (pa.scalar(t, pa.large_string()) for t in (",", "", end))
    parts = []
    for start in range(0, len(positions), _CHUNK):
        at = positions[start:start + _CHUNK]
        if columns:
            lines = pc.binary_join_element_wise(*[table.take(pa.array(codes[at])) for codes, table in columns], comma)
        else:
            lines = pa.array([""] * len(at), type=pa.large_string())
        parts.append(pc.binary_join_element_wise(lines, blank, sep))
    return pa.concat_arrays(parts) if parts else pa.array([], pa.large_string())


def _cells(values: pd.Series, coded: Codes | None = None) -> tuple[np.ndarray, Any] | None:
    """A column's cells as pandas writes them: per row the code (0..m, m: missing, written empty) of its
    distinct value, and those values' CSV texts (a pyarrow array, the empty text last); None if a
    text value holds a line break.

    Text columns whose values need no quoting are their own texts; others are formatted once per
    distinct value by pandas itself (beside a constant column, so an empty text is not quoted as a
    lone field). ``coded``: the column's :class:`core.codes.Codes`, if known."""
    import pyarrow as pa

    codes, uniques = (coded.codes, coded.uniques) if coded is not None else pd.factorize(values, use_na_sentinel=True)
    text_only = values.dtype == object and _all_text(uniques)
    if text_only or values.dtype == object or isinstance(values.dtype, pd.StringDtype):
        joined = "".join(uniques) if text_only else "".join(map(str, uniques))
        if "\n" in joined or "\r" in joined:
            return None
    if text_only and not _needs_quotes(joined):
        text = list(uniques)
    else:
        codes, _ = value_codes(values, coded)
        present, where = np.unique(codes, return_index=True)
        reps = values.iloc[where[present >= 0]].reset_index(drop=True)  # one row per distinct value
        probe = pd.DataFrame({"v": reps, "z": 0})
        text = [t[:-2] for t in probe.to_csv(index=False, header=False, lineterminator="\n").split("\n")[:-1]]
    codes = np.where(codes < 0, len(text), codes).astype(np.int32 if len(text) < 2**31 - 1 else np.int64)
    return codes, pa.array([*text, ""], type=pa.large_string())


def _all_text(uniques: object) -> bool:
    """True if every one of the distinct values (no missing among them) is a str."""
    return bool(len(uniques)) and pd.api.types.infer_dtype(uniques, skipna=False) == "string"  # type: ignore[arg-type]


def _needs_quotes(text: str) -> bool:
    """True if the text holds a character csv's minimal quoting quotes for (``,``, ``"``, line breaks)."""
    return any(c in text for c in (",", '"', "\n", "\r"))


def _whole(frame: pd.DataFrame, path: str | Path, prepare: Callable[[pd.DataFrame], pd.DataFrame],
           order: np.ndarray | None) -> None:
    prepare(frame if order is None else frame.iloc[order]).to_csv(path, index=False)
