"""The loss a node's suppressed rows add, summed the same way whichever backend counted them.

A suppressed row costs 1 in every attribute instead of its generalized cost, so the suppressed rows
add ``sum over them of (1 - sum_a w_a * cost_a(code))`` to the loss (before dividing by n). Summed
row by row, the float result depends on the order of the rows, which differs between the numpy path
(distinct rows) and the numba path (rolled-up class tables): the two backends agreed only to about
1e-13. Here both backends only count, exactly and in integers, how many suppressed rows carry each
code of each QI; :func:`suppression_extra` turns those counts into the cost with one correctly
rounded sum per QI (``math.fsum``). The loss of a node is then the same float on either backend, so a
search never depends on which backend evaluated a node (core/lattice/backend.py chooses it per run).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def suppression_extra(rows: int, code_counts: Sequence[np.ndarray] | np.ndarray, costs: Sequence[np.ndarray],
                      weights: np.ndarray) -> float:
    """``rows - sum_a w_a * sum_code count_a[code] * cost_a[code]``.

    ``code_counts[a]`` counts the suppressed rows per code of QI a at the node's level (at least as
    long as ``costs[a]``, the cost of each code at that level); ``weights`` sum to 1.
    """
    total = float(rows)
    for a, cost in enumerate(costs):
        counts = np.asarray(code_counts[a][: len(cost)], dtype=np.float64)
        hit = np.flatnonzero(counts)
        total -= float(weights[a]) * math.fsum((counts[hit] * cost[hit]).tolist())
    return total


def failing_code_counts(codes: Sequence[np.ndarray], counts: np.ndarray, fail_row: np.ndarray,
                        widths: Sequence[int]) -> tuple[int, list[np.ndarray]]:
    """The numpy path's counts: suppressed rows and, per QI, suppressed rows per code.

    ``codes[a]`` is QI a's code of every distinct row at the node's level, ``counts`` the
    multiplicity of every distinct row, ``fail_row`` whether it is suppressed, ``widths[a]`` QI a's
    number of codes at that level. The suppressed rows are located once; every QI's codes are then
    counted in one weighted ``bincount``, each QI's codes shifted past the previous QIs' (the same
    integers as one ``bincount`` per QI, in a third of the time on Adult).
    """
    rows = np.flatnonzero(fail_row)
    weight = counts[rows]
    starts = np.zeros(len(widths) + 1, dtype=np.int64)
    np.cumsum(widths, out=starts[1:])
    if not len(rows) or not len(widths):
        return 0, [np.zeros(int(w), dtype=np.int64) for w in widths]
    shifted = np.empty((len(widths), len(rows)), dtype=np.int64)
    for a, code in enumerate(codes):
        np.add(code[rows], starts[a], out=shifted[a], casting="unsafe")
    flat = np.bincount(shifted.ravel(), weights=np.broadcast_to(weight, shifted.shape).ravel(),
                       minlength=int(starts[-1])).astype(np.int64)
    return int(weight.sum()), np.split(flat, starts[1:-1])


def suppression_extra_matrix(rows: int, code_counts: np.ndarray, costs: np.ndarray, weights: np.ndarray) -> float:
    """:func:`suppression_extra` for counts and costs given as (d, codes) matrices, the same float.

    ``code_counts[a, code]`` as the kernels return them, ``costs[a, code]`` QI a's cost of each code
    at the node's level, 0 past its last code (where the count is 0 too). Each QI's sum is
    ``math.fsum`` of the same products (a zero product adds nothing to an exact sum), subtracted in
    QI order, so the result is bit for bit :func:`suppression_extra`'s; the nonzero counts are found
    with one scan of the matrix instead of a few numpy calls per QI.
    """
    width = min(code_counts.shape[1], costs.shape[1])
    qi, code = np.divmod(np.flatnonzero(code_counts[:, :width] != 0), width)  # a bool scan: fast
    values = (code_counts[qi, code] * costs[qi, code]).tolist()
    ends = np.searchsorted(qi, np.arange(1, len(weights) + 1)).tolist()
    total, start = float(rows), 0
    for a, end in enumerate(ends):
        if end > start:
            total -= float(weights[a]) * math.fsum(values[start:end])
        start = end
    return total
