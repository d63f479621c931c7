"""The matrix form of the suppression cost is the same float as the per-QI form."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.lattice.suppression import suppression_extra, suppression_extra_matrix


@st.composite
def suppression_case(draw: st.DrawFn) -> tuple[int, np.ndarray, list[np.ndarray], np.ndarray]:
    """Suppressed rows, per-QI code counts (wider than the costs, as the kernels return them), costs, weights."""
    d = draw(st.integers(1, 6))
    widths = [draw(st.integers(1, 8)) for _ in range(d)]
    pad = draw(st.integers(0, 3))
    counts = np.zeros((d, max(widths) + pad), np.int64)
    costs = []
    for a, w in enumerate(widths):
        counts[a, :w] = draw(st.lists(st.integers(0, 50), min_size=w, max_size=w))
        costs.append(np.array(draw(st.lists(st.floats(0, 1), min_size=w, max_size=w)), np.float64))
    raw = np.array(draw(st.lists(st.floats(0.01, 10), min_size=d, max_size=d)))
    return int(counts.sum(axis=1).max()), counts, costs, raw / raw.sum()


@settings(max_examples=300, deadline=None)
@given(suppression_case())
def test_matrix_form_is_bit_for_bit_the_per_qi_form(case: tuple[int, np.ndarray, list[np.ndarray], np.ndarray]) -> None:
    rows, counts, costs, weights = case
    matrix = np.zeros((len(costs), max(len(c) for c in costs) + 2))  # 0 past each QI's last code
    for a, c in enumerate(costs):
        matrix[a, : len(c)] = c
    assert suppression_extra_matrix(rows, counts, matrix, weights) == suppression_extra(rows, counts, costs, weights)
