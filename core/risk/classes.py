"""Equivalence classes: rows with equal values in every quasi-identifier."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.codes import class_key, codes_of


def class_index(frame: pd.DataFrame, columns: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Class id of every row (0..m-1, in order of first appearance) and the size of each class.

    Missing values form their own value. No columns means one class holding every row.
    """
    n = len(frame)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cls = class_key(((c.codes, c.size) for c in (codes_of(frame, col) for col in columns)), n)  # carried, if any
    return cls, np.bincount(cls).astype(np.int64)


def size_histogram(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct class sizes ``j`` (ascending) and the number of classes ``c_j`` of each size."""
    return np.unique(np.asarray(sizes, dtype=np.int64), return_counts=True)


def qi_analysis(frame: pd.DataFrame, columns: list[str]) -> list[dict[str, float | str]]:
    """Per quasi-identifier, as ARX's "quasi-identifiers" risk view (Motwani and Xu 2007):
    *distinction* = distinct values / n, *separation* = share of record pairs that differ in it,
    1 - sum_v c_v (c_v - 1) / (n (n - 1))."""
    n = len(frame)
    out: list[dict[str, float | str]] = []
    for col in columns:
        got = codes_of(frame, col)  # the rows per distinct value (missing: one value), in any order
        counts = np.bincount(np.where(got.codes < 0, got.size, got.codes)).astype(np.float64)
        counts = counts[counts > 0]
        pairs = n * (n - 1.0)
        out.append({"name": col, "distinction": float(len(counts) / n) if n else 0.0,
                    "separation": float(1.0 - (counts * (counts - 1.0)).sum() / pairs) if pairs else 0.0})
    return out
