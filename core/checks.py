"""Row-by-row verdicts of the input contract for whole columns (pure, vectorized).

:func:`value_problems` says, for every value of a QI column, why its hierarchy would refuse it:
the same reasons the stream gives one report at a time, so ``anonstream spec check``, the batch
reader and ``push`` agree on which rows are bad.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from core import contract
from core.hierarchies import DateHierarchy, Hierarchy, IntervalHierarchy, TableHierarchy

OK = ""
NOT_IN_HIERARCHY = "value-not-in-hierarchy"
NOT_A_NUMBER = "not-a-number"
NOT_WHOLE = "not-a-whole-number"
BAD_DATE = "invalid-date"
AMBIGUOUS_DATE = "ambiguous-date"
MISSING = "missing"


def value_problems(hierarchy: Hierarchy, values: pd.Series) -> np.ndarray:
    """Per value, ``""`` if the hierarchy accepts it, else a reason code (constants above).

    Missing values are not judged here (see :func:`core.contract.missing_mask`). Each distinct value
    is judged once (a column holds few distinct values; the verdict depends on the value alone).
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    if len(uniques) < len(values):
        return _problems(hierarchy, pd.Series(uniques))[codes]
    return _problems(hierarchy, values)


def _problems(hierarchy: Hierarchy, values: pd.Series) -> np.ndarray:
    out = np.full(len(values), OK, dtype=object)
    if isinstance(hierarchy, IntervalHierarchy):
        num = pd.to_numeric(values.astype(str).str.strip(), errors="coerce").to_numpy(dtype=np.float64)
        out[np.isnan(num)] = NOT_A_NUMBER
        if hierarchy.integer:
            out[contract.not_whole(num)] = NOT_WHOLE
        lo_hi = hierarchy.domain or ((hierarchy.edges[0][0], hierarchy.edges[0][-1]) if hierarchy.edges else None)
        if lo_hi is not None:
            outside = (num < lo_hi[0]) | (num > lo_hi[1])
            if hierarchy.edges is not None:
                outside |= num >= lo_hi[1]
            out[outside & (out == OK)] = NOT_IN_HIERARCHY
    elif isinstance(hierarchy, DateHierarchy):
        days, bad, ambiguous = contract.to_days(values, hierarchy.format)
        out[bad] = BAD_DATE
        out[ambiguous] = AMBIGUOUS_DATE
        if hierarchy.domain is not None:
            lo, hi = (pd.Timestamp(d, tz="UTC") for d in hierarchy.domain)
            outside = np.asarray((days < lo) | (days > hi)) & ~bad & ~ambiguous
            out[outside] = NOT_IN_HIERARCHY
    elif isinstance(hierarchy, TableHierarchy):
        codes = hierarchy.leaf_index.get_indexer(values.astype(str).str.strip())
        out[codes < 0] = NOT_IN_HIERARCHY
    return out


def allowed_values(hierarchy: Hierarchy) -> list[str]:
    """The leaves a categorical hierarchy lists (for "did you mean" suggestions); empty otherwise."""
    if isinstance(hierarchy, TableHierarchy):
        return [str(v) for v in hierarchy.leaf_index]
    return []
