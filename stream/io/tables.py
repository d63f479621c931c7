"""Read input tables (CSV, JSON lines) into DataFrames of strings, with clear errors."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from core.errors import InputDataError


def read_table(path: str | Path, sep: str | None = None) -> pd.DataFrame:
    """Read a CSV (separator sniffed: ``,`` or ``;``) or a ``.jsonl`` file; all values as strings."""
    p = Path(path)
    if not p.exists():
        raise InputDataError(f"input file not found: {p}", reason="file-not-found")
    if p.stat().st_size == 0:
        raise InputDataError(f"input is empty: {p} has no rows", reason="empty-input")
    if p.suffix in {".jsonl", ".ndjson"}:
        df = pd.read_json(p, lines=True, dtype=False)
        return df.astype({c: str for c in df.columns if df[c].dtype == object})
    if sep is None:
        with p.open(encoding="utf-8") as fh:
            head = fh.readline()
        sep = ";" if head.count(";") > head.count(",") else ","
    try:
        df = pd.read_csv(p, sep=sep, dtype=str, skipinitialspace=True, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise InputDataError(f"input is empty: {p} has no rows", reason="empty-input") from None
    if df.empty:
        raise InputDataError(f"input is empty: {p} has a header but no rows", reason="empty-input")
    return df
