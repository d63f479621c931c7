"""Read input tables (CSV, JSON lines, Parquet) into DataFrames of strings, with clear errors.

The rows are read by :func:`stream.io.rows.iter_rows`, the one reader ``push`` uses as well.

:func:`read_for_spec` applies the input contract of core/contract.py to a whole file, the same
rules the stream applies per report: missing values by the spec's ``on_missing`` policy (the
number of dropped rows is kept in ``frame.attrs["dropped_missing"]``), dates by their declared
format with ambiguous values refused, whole numbers for integer hierarchies. Errors name the
file's line numbers (header counted).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from core import contract
from core.checks import value_problems
from core.codes import Codes, TableCodes, attach, codes_of
from core.encoding import Schema
from core.errors import InputDataError, preview
from core.hierarchies import DateHierarchy
from core.schema import DatasetSpec
from stream.io import arrow_csv
from stream.io.rows import JSON_SUFFIXES, csv_cells, csv_header, is_reject_column, iter_rows
from stream.io.text import BINARY_SUFFIXES, check_input, decode_error, text_encoding

log = logging.getLogger(__name__)
_BLOCK = 8_192  # rows of a CSV per block: a block's cells are factorized, then dropped

_WORDING = {"ambiguous-date": "ambiguous dates (day and month could be swapped; declare its format in the spec)",
            "invalid-date": "values that are not dates in the declared format",
            "not-a-whole-number": "values that are not whole numbers", "not-a-number": "non-numeric values"}


def line_numbers(frame: pd.DataFrame, positions: object) -> list[int]:
    """File line numbers (header counted) of the given row positions of a frame from :func:`read_table`
    (its index holds the row's position in the file, kept when rows are dropped)."""
    lines = frame.attrs.get("lines")
    if lines is not None:
        return [int(lines[int(frame.index[p])]) for p in positions]  # type: ignore[attr-defined]
    first = int(frame.attrs.get("first_line", 2))
    return [first + int(frame.index[p]) for p in positions]  # type: ignore[attr-defined]


def read_for_spec(path: str | Path, spec: DatasetSpec, schema: Schema | None = None) -> pd.DataFrame:
    """Read a table as the spec's ``[input]`` section says and apply the input contract.

    Each used column (and each declared date column) is factorized once; the frame carries those codes
    (:func:`core.codes.attach`) for the steps after it (encoding, verifier, risk, utility report)."""
    fmt = spec.input
    df = read_table(path, fmt.separator, fmt.columns, fmt.encoding)
    used = [c for c in spec.used_columns() if c in df.columns]
    dates = [c for c in spec.input.dates if c in df.columns and c not in used]
    codes = {c: codes_of(df, c) for c in [*used, *dates]}  # a CSV's reader factorized every column
    policy = fmt.missing_policy
    gone = {c: _missing(codes[c], fmt.missing) for c in used}  # judged once per distinct value
    for c in used:
        mask = gone[c]
        if mask.any():
            label = fmt.missing_label if policy == "leaf" else pd.NA
            df.loc[mask, c] = label
            if policy == "leaf":  # the label is a value of the column now
                codes[c] = Codes.renumbered(np.where(mask, codes[c].size, codes[c].codes),
                                            np.append(codes[c].uniques, np.array([label], dtype=object)))
            else:
                codes[c] = Codes(np.where(mask, -1, codes[c].codes), codes[c].uniques)
    dropped = 0
    any_gone = np.zeros(len(df), dtype=bool)
    for mask in gone.values():
        any_gone |= mask
    if policy == "drop":
        keep = ~any_gone
        dropped = int((~keep).sum())
        if dropped:
            log.info("dropped %d of %d rows with missing values (on_missing = drop)", dropped, len(df))
            df = df[keep]
            codes = {c: v.take(keep.nonzero()[0]) for c, v in codes.items()}
        if df.empty:
            raise InputDataError(f"input is empty after dropping rows with missing values: {path}",
                                 reason="empty-input")
    elif policy == "error" and any_gone.any():
        col = next(c for c in used if gone[c].any())
        lines = line_numbers(df, gone[col].nonzero()[0])
        raise InputDataError(f"column '{col}' has {len(lines)} missing value(s), line(s) {preview(lines)}; "
                             f"set on_missing = \"drop\" or \"leaf\" in the spec's [input]", reason="missing-field")
    df.attrs["dropped_missing"] = dropped
    attach(df, TableCodes(df.index, codes))  # each one as Codes.of(df[c]) would give it
    if schema is not None:
        check_values(df, schema)
    return df


def _missing(codes: Codes, tokens: tuple[str, ...]) -> np.ndarray:
    """:func:`core.contract.missing_mask` of the column, from its codes (each distinct value judged once)."""
    return np.append(contract.missing_distinct(codes.uniques, tokens), True)[codes.codes]


def check_values(df: pd.DataFrame, schema: Schema) -> None:
    """Refuse unparseable or ambiguous dates and numbers, naming the column and the file's lines."""
    spec = schema.spec
    checks: list[tuple[str, object]] = [(q.name, schema.hierarchies[q.name]) for q in spec.qi]
    checks += [(c, DateHierarchy(c, fmt=f)) for c, f in spec.input.dates.items() if c not in spec.qi_names]
    for name, hierarchy in checks:
        if name not in df.columns:
            continue
        col = df[name]
        got = codes_of(df, name)  # each distinct value is judged once; a missing one is never refused
        codes, distinct = np.where(got.codes < 0, got.size, got.codes), pd.Series([*got.uniques, None], dtype=object)
        problems = value_problems(hierarchy, distinct)  # type: ignore[arg-type]
        problems[contract.missing_mask(distinct, spec.input.missing)] = ""
        for reason, wording in _WORDING.items():
            bad = (problems == reason).nonzero()[0]
            hit = np.isin(codes, bad).nonzero()[0] if len(bad) else bad
            if len(hit):
                shown = col.iloc[hit[:3]].astype(str).tolist()
                where = ", ".join(map(str, line_numbers(df, hit[:5]))) + (" ..." if len(hit) > 5 else "")
                raise InputDataError(f"column '{name}' has {wording}: {preview(shown, 3)} "
                                     f"({len(hit)} in all; line {where})", reason=reason)


def _text(v: object) -> object:
    """A value as a string, a missing one (None, NaN) as None: timestamps in ISO-8601, the rest by str()."""
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return None
    if isinstance(v, str):
        return v
    return v.isoformat() if hasattr(v, "isoformat") else str(v)


def read_table(path: str | Path, sep: str | None = None, columns: tuple[str, ...] | None = None,
               encoding: str | None = None) -> pd.DataFrame:
    """Read a CSV (separator sniffed: ``,`` or ``;``), ``.jsonl`` or ``.parquet`` file; all values as strings.

    The rows are those of :func:`stream.io.rows.iter_rows`, the reader ``push`` streams a file with, so
    batch and stream never read one file two ways (its rules: a column named twice is refused, quoted
    line breaks, short rows, encodings). Each value is a string (JSON and Parquet values as text,
    timestamps in ISO-8601), a missing one None. ``frame.attrs["lines"]`` holds each row's file line by
    position (:func:`line_numbers`) and ``frame.attrs["encoding"]`` the codec the text was read with
    (None for Parquet); text not in UTF-8 is said on the log.
    """
    p = check_input(path, encoding)
    codec = None if p.suffix.lower() in BINARY_SUFFIXES else text_encoding(p, encoding)
    if codec is not None and p.suffix.lower() not in JSON_SUFFIXES:
        header, sep = csv_header(p, sep, encoding, columns)
        if not any(is_reject_column(c) for c in header):  # the same rows as iter_rows, without a dict per row
            fast = arrow_csv.coded_cells(p, header, sep, codec, header_row=not columns)
            try:
                starts, coded = fast or _coded_cells(csv_cells(p, sep, encoding, columns)[1], len(header))
            except UnicodeDecodeError:
                raise decode_error(p, codec, declared=encoding is not None) from None
            df = _frame(p, header, starts, [c.uniques[c.codes] for c in coded], codec)
            return attach(df, TableCodes(df.index, dict(zip(header, coded, strict=True))))
    names: dict[str, None] = {}  # the columns in order of first appearance (JSON objects may differ)
    lines: list[int] = []
    rows: list[dict[str, object]] = []
    for line, row in iter_rows(p, sep, encoding=encoding, columns=columns):
        lines.append(line)
        rows.append(row)
        names.update(dict.fromkeys(row))
    cols = list(names)
    return _frame(p, cols, lines, [[_text(r.get(c)) for r in rows] for c in cols], codec)


def _coded_cells(cells: Iterator[tuple[int, list[str]]], width: int) -> tuple[np.ndarray, list[Codes]]:
    """The line of each row of a CSV and the :class:`Codes` of each column, read ``_BLOCK`` rows at a time:
    each block's column is factorized and only its distinct texts kept, then the blocks' distinct texts
    are factorized once more, so the codes are those of the whole column (by first appearance) and each
    distinct text is held once, not once per cell."""
    lines: list[np.ndarray] = []
    blocks: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(width)]
    while chunk := list(itertools.islice(cells, _BLOCK)):
        lines.append(np.fromiter((line for line, _ in chunk), dtype=np.int64, count=len(chunk)))
        for j, column in enumerate(zip(*(row for _, row in chunk), strict=True)):
            codes, uniques = pd.factorize(np.asarray(column, dtype=object))
            blocks[j].append((codes.astype(np.int32), np.asarray(uniques, dtype=object)))
        del chunk
    out = []
    for parts in blocks if lines else []:  # (no row: _frame refuses the file)
        merged, uniques = pd.factorize(np.concatenate([u for _, u in parts]))
        offsets = np.cumsum([0, *(len(u) for _, u in parts[:-1])])
        codes = np.concatenate([merged[off + c] for (c, _), off in zip(parts, offsets, strict=True)])
        out.append(Codes(codes.astype(np.int32, copy=False), np.asarray(uniques, dtype=object)))
    return np.concatenate(lines) if lines else np.zeros(0, dtype=np.int64), out


def _frame(p: Path, cols: list[str], lines: list[int] | np.ndarray, values: list, codec: str | None) -> pd.DataFrame:
    """The frame of :func:`read_table`: ``values`` holds one sequence per column."""
    if not len(lines):
        raise InputDataError(f"input is empty: {p} has no rows", reason="empty-input")
    df = pd.DataFrame({c: np.asarray(v, dtype=object) for c, v in zip(cols, values)}, columns=cols)
    df.attrs.update(lines=LineMap(np.asarray(lines, dtype=np.int64)), first_line=int(lines[0]), encoding=codec)
    return df


class LineMap:
    """Each row's file line by position, kept in ``frame.attrs``. pandas compares the attrs of frames it
    concatenates with ``==``, which a bare array answers element-wise (and fails on): this compares by identity.

    It is never changed, so a frame derived from another shares it (its index keeps the file positions):
    pandas deep-copies ``attrs`` into every column it hands out and caches those columns, and one copy of
    the lines per column read held as many megabytes as the frame's text on Adult x8."""

    __slots__ = ("lines",)

    def __init__(self, lines: np.ndarray) -> None:
        self.lines = lines
        self.lines.flags.writeable = False

    def __deepcopy__(self, memo: dict[int, object]) -> LineMap:
        return self

    def __getitem__(self, position: int) -> int:
        return int(self.lines[position])

    def __len__(self) -> int:
        return len(self.lines)
