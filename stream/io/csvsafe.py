"""CSV cells that a spreadsheet would run as formulas are neutralized before they are written.

A cell whose text starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is prefixed with a
single quote (OWASP's advice against CSV injection): ``=HYPERLINK(...)`` is written as
``'=HYPERLINK(...)``. Numbers (int and float values) are never changed, so numeric columns keep their
sign; string columns that hold signed numbers can be exempted by name (``--raw-columns``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from core.codes import Codes, TableCodes, attach, carried

DANGEROUS = ("=", "+", "-", "@", "\t", "\r")


def neutralize(value: Any) -> Any:
    """``value`` with a leading single quote if it is text a spreadsheet would treat as a formula."""
    if isinstance(value, str) and value.startswith(DANGEROUS):
        return "'" + value
    return value


def unneutralize(value: Any) -> Any:
    """Undo :func:`neutralize` on a cell read back from CSV (``'=x`` -> ``=x``; other text unchanged)."""
    if isinstance(value, str) and value.startswith("'") and value[1:].startswith(DANGEROUS):
        return value[1:]
    return value


def neutralize_row(values: Iterable[Any], raw: Iterable[bool] | None = None) -> list[Any]:
    """A row of cells, each neutralized unless its ``raw`` flag is set."""
    flags = list(raw) if raw is not None else None
    return [v if flags is not None and flags[i] else neutralize(v) for i, v in enumerate(values)]


def neutralize_frame(frame: pd.DataFrame, raw_columns: Iterable[str] = ()) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells are neutralized, except in ``raw_columns`` and numeric columns."""
    out = frame.copy(deep=False)  # columns are replaced, never written into
    keep = set(raw_columns)
    carry = {}  # the codes the frame carries, of the columns left as they were (core.codes)
    for col in out.columns:
        got = carried(frame, col)
        if not (col in keep or pd.api.types.is_numeric_dtype(out[col])):
            column = out[col]
            fixed = _neutralize_column(column, got)
            if fixed is not column:  # changed: its codes may no longer name distinct texts
                out[col] = fixed
                continue
        if got is not None:
            carry[col] = got
    return attach(out, TableCodes(out.index, carry)) if carry and frame.columns.is_unique else out


def _neutralize_column(values: pd.Series, coded: Codes | None = None) -> pd.Series:
    """``values`` neutralized, deciding once per distinct value (a column holds few distinct labels);
    ``coded``: the column's :class:`core.codes.Codes`, if known. Returns ``values`` itself if unchanged."""
    codes, uniques = (coded.codes, coded.uniques) if coded is not None else pd.factorize(values, use_na_sentinel=True)
    if len(uniques) and pd.api.types.infer_dtype(uniques, skipna=False) == "string":  # text only: test the prefix
        import pyarrow as pa
        import pyarrow.compute as pc

        first = pc.utf8_slice_codeunits(pa.array(np.asarray(uniques, dtype=object), type=pa.large_string()), 0, 1)
        changed = np.flatnonzero(pc.is_in(first, value_set=pa.array(DANGEROUS, pa.large_string())).to_numpy(
            zero_copy_only=False)).tolist()
    else:
        changed = [i for i, u in enumerate(uniques) if neutralize(u) is not u]
    if not changed:
        return values
    fixed = np.asarray(uniques, dtype=object)
    fixed[changed] = ["'" + fixed[i] for i in changed]
    hit = np.isin(codes, changed)
    out = values.astype(object).copy()
    out[hit] = fixed[codes[hit]]
    return out
