"""Read input tables (CSV, JSON lines, Parquet) into DataFrames of strings, with clear errors.

:func:`read_for_spec` applies the input contract of core/contract.py to a whole file, the same
rules the stream applies per report: missing values by the spec's ``on_missing`` policy (the
number of dropped rows is kept in ``frame.attrs["dropped_missing"]``), dates by their declared
format with ambiguous values refused, whole numbers for integer hierarchies. Errors name the
file's line numbers (header counted).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from core import contract
from core.checks import value_problems
from core.encoding import Schema
from core.errors import InputDataError, preview
from core.hierarchies import DateHierarchy
from core.schema import DatasetSpec
from stream.io.text import BINARY_SUFFIXES, check_input, decode_error, text_encoding

log = logging.getLogger(__name__)

_WORDING = {"ambiguous-date": "ambiguous dates (day and month could be swapped; declare its format in the spec)",
            "invalid-date": "values that are not dates in the declared format",
            "not-a-whole-number": "values that are not whole numbers", "not-a-number": "non-numeric values"}


def line_numbers(frame: pd.DataFrame, positions: object) -> list[int]:
    """File line numbers (header counted) of the given row positions of a frame from :func:`read_table`
    (its index holds the row's position in the file, kept when rows are dropped)."""
    first = int(frame.attrs.get("first_line", 2))
    return [first + int(frame.index[p]) for p in positions]  # type: ignore[attr-defined]


def read_for_spec(path: str | Path, spec: DatasetSpec, schema: Schema | None = None) -> pd.DataFrame:
    """Read a table as the spec's ``[input]`` section says and apply the input contract."""
    fmt = spec.input
    df = read_table(path, fmt.separator, fmt.columns, fmt.encoding)
    used = [c for c in spec.used_columns() if c in df.columns]
    policy = fmt.missing_policy
    gone = pd.DataFrame({c: contract.missing_mask(df[c], fmt.missing) for c in used}, index=df.index)
    for c in used:
        mask = gone[c].to_numpy()
        if mask.any():
            df.loc[mask, c] = fmt.missing_label if policy == "leaf" else pd.NA
    dropped = 0
    if policy == "drop":
        keep = ~gone.any(axis=1).to_numpy()
        dropped = int((~keep).sum())
        if dropped:
            log.info("dropped %d of %d rows with missing values (on_missing = drop)", dropped, len(df))
            df = df[keep]
        if df.empty:
            raise InputDataError(f"input is empty after dropping rows with missing values: {path}",
                                 reason="empty-input")
    elif policy == "error" and gone.to_numpy().any():
        col = gone.any().idxmax()
        lines = line_numbers(df, (gone[col].to_numpy()).nonzero()[0])
        raise InputDataError(f"column '{col}' has {len(lines)} missing value(s), line(s) {preview(lines)}; "
                             f"set on_missing = \"drop\" or \"leaf\" in the spec's [input]", reason="missing-field")
    df.attrs["dropped_missing"] = dropped
    if schema is not None:
        check_values(df, schema)
    return df


def check_values(df: pd.DataFrame, schema: Schema) -> None:
    """Refuse unparseable or ambiguous dates and numbers, naming the column and the file's lines."""
    spec = schema.spec
    checks: list[tuple[str, object]] = [(q.name, schema.hierarchies[q.name]) for q in spec.qi]
    checks += [(c, DateHierarchy(c, fmt=f)) for c, f in spec.input.dates.items() if c not in spec.qi_names]
    for name, hierarchy in checks:
        if name not in df.columns:
            continue
        col = df[name]
        codes, uniques = pd.factorize(col, use_na_sentinel=False)  # each distinct value is judged once
        distinct = pd.Series(uniques)
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


def _json_lines(p: Path, codec: str) -> list[dict[str, object]]:
    """The objects of a JSON-lines file; a line that is not a JSON object stops the read, naming it."""
    from stream.io.rows import jsonl_rows

    records = [obj for _line, obj in jsonl_rows(p, codec)]
    if not records:
        raise InputDataError(f"input is empty: {p} has no rows", reason="empty-input")
    return records


def _as_text(df: pd.DataFrame) -> pd.DataFrame:
    """Every value as a string, keeping missing values (None/NaN) missing."""
    return df.apply(lambda col: col.map(lambda v: v if v is None or v is pd.NA or (isinstance(v, float) and v != v)
                                        else (v.isoformat() if hasattr(v, "isoformat") else str(v))))


def read_parquet(p: Path) -> pd.DataFrame:
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        raise InputDataError("reading Parquet needs pyarrow (pip install pyarrow)", reason="invalid-input") from None
    try:
        return pq.read_table(p).to_pandas()
    except Exception as exc:  # pyarrow raises several types for a corrupt file
        raise InputDataError(f"{p}: not a readable Parquet file ({str(exc)[:80]})", reason="invalid-input") from None


def read_table(path: str | Path, sep: str | None = None, columns: tuple[str, ...] | None = None,
               encoding: str | None = None) -> pd.DataFrame:
    """Read a CSV (separator sniffed: ``,`` or ``;``), ``.jsonl`` or ``.parquet`` file; all values as strings.

    Text is decoded by ``encoding`` (the spec's ``[input] encoding``) or the detected one
    (stream/io/text.py); a folder, a binary file or bytes the encoding cannot read are one-line errors.
    ``frame.attrs["first_line"]`` is the file line of the first row (2 after a header row) and
    ``frame.attrs["encoding"]`` the codec the text was read with (None for Parquet).
    """
    p = check_input(path, encoding)
    if p.suffix.lower() in BINARY_SUFFIXES:
        df = _as_text(read_parquet(p))
        if df.empty:
            raise InputDataError(f"input is empty: {p} has no rows", reason="empty-input")
        df.attrs.update(first_line=1, encoding=None)
        return df
    codec = text_encoding(p, encoding)
    try:
        if p.suffix in {".jsonl", ".ndjson"}:
            df = _as_text(pd.DataFrame.from_records(_json_lines(p, codec)))
            df.attrs.update(first_line=1, encoding=codec)
            return df
        if sep is None:
            with p.open(encoding=codec) as fh:
                head = fh.readline()
            sep = ";" if head.count(";") > head.count(",") else ","
        df = pd.read_csv(p, sep=sep, dtype=str, skipinitialspace=True, keep_default_na=False, encoding=codec,
                         header=None if columns else "infer", names=list(columns) if columns else None)
    except UnicodeDecodeError:
        raise decode_error(p, codec, declared=encoding is not None) from None
    except pd.errors.EmptyDataError:
        raise InputDataError(f"input is empty: {p} has no rows", reason="empty-input") from None
    if df.empty:
        raise InputDataError(f"input is empty: {p} has a header but no rows", reason="empty-input")
    df.attrs.update(first_line=1 if columns else 2, encoding=codec)
    return df
