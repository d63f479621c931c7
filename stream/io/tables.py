"""Read input tables (CSV, JSON lines) into DataFrames of strings, with clear errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from core.errors import InputDataError
from core.schema import DatasetSpec

log = logging.getLogger(__name__)


def read_for_spec(path: str | Path, spec: DatasetSpec) -> pd.DataFrame:
    """Read a table as the spec's ``[input]`` section says (header names, separator, missing values)."""
    fmt = spec.input
    df = read_table(path, fmt.separator, fmt.columns)
    if fmt.missing:
        df = df.replace(list(fmt.missing), pd.NA)
    if fmt.drop_missing:
        used = [c for c in spec.used_columns() if c in df.columns]
        before = len(df)
        df = df.dropna(subset=used)
        if len(df) < before:
            log.info("dropped %d of %d rows with missing values", before - len(df), before)
        if df.empty:
            raise InputDataError(f"input is empty after dropping rows with missing values: {path}",
                                 reason="empty-input")
    return df


def _json_lines(p: Path) -> list[dict[str, object]]:
    """The objects of a JSON-lines file; a line that is not a JSON object stops the read, naming it."""
    records = []
    with p.open(encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputDataError(f"{p}, line {n}: not valid JSON ({exc.msg} at column {exc.colno})",
                                     reason="malformed-json") from None
            except RecursionError:
                raise InputDataError(f"{p}, line {n}: JSON nested too deeply", reason="malformed-json") from None
            if not isinstance(obj, dict):
                raise InputDataError(f"{p}, line {n}: a JSON {type(obj).__name__}, expected an object",
                                     reason="malformed-json")
            records.append(obj)
    if not records:
        raise InputDataError(f"input is empty: {p} has no rows", reason="empty-input")
    return records


def read_table(path: str | Path, sep: str | None = None, columns: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Read a CSV (separator sniffed: ``,`` or ``;``) or a ``.jsonl`` file; all values as strings."""
    p = Path(path)
    if not p.exists():
        raise InputDataError(f"input file not found: {p}", reason="file-not-found")
    if p.stat().st_size == 0:
        raise InputDataError(f"input is empty: {p} has no rows", reason="empty-input")
    if p.suffix in {".jsonl", ".ndjson"}:
        df = pd.DataFrame.from_records(_json_lines(p))
        return df.astype({c: str for c in df.columns if df[c].dtype == object})
    if sep is None:
        with p.open(encoding="utf-8") as fh:
            head = fh.readline()
        sep = ";" if head.count(";") > head.count(",") else ","
    try:
        df = pd.read_csv(p, sep=sep, dtype=str, skipinitialspace=True, keep_default_na=False,
                         header=None if columns else "infer", names=list(columns) if columns else None)
    except pd.errors.EmptyDataError:
        raise InputDataError(f"input is empty: {p} has no rows", reason="empty-input") from None
    if df.empty:
        raise InputDataError(f"input is empty: {p} has a header but no rows", reason="empty-input")
    return df
