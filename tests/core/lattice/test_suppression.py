"""The matrix form of the suppression cost is the same float as the per-QI form; the numpy path's counts
are those of one ``bincount`` per QI."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.lattice.suppression import failing_code_counts, suppression_extra, suppression_extra_matrix


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


@st.composite
def failing_case(draw: st.DrawFn) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, list[int]]:
    """Distinct rows' int32 codes per QI (QIs of one code included), multiplicities, suppressed flags, widths."""
    m = draw(st.integers(0, 40))
    widths = [draw(st.integers(1, 9)) for _ in range(draw(st.integers(1, 6)))]
    codes = [np.array(draw(st.lists(st.integers(0, w - 1), min_size=m, max_size=m)), np.int32) for w in widths]
    counts = np.array(draw(st.lists(st.integers(1, 1000), min_size=m, max_size=m)), np.int64)
    fail = np.array(draw(st.lists(st.booleans(), min_size=m, max_size=m)), bool)
    return codes, counts, fail, widths


@settings(max_examples=300, deadline=None)
@given(failing_case())
def test_failing_code_counts_are_one_bincount_per_qi(case: tuple[list[np.ndarray], np.ndarray, np.ndarray,
                                                                  list[int]]) -> None:
    codes, counts, fail, widths = case
    rows, per_code = failing_code_counts(codes, counts, fail, widths)
    assert rows == int(counts[fail].sum())
    for code, width, got in zip(codes, widths, per_code, strict=True):
        want = np.bincount(code[fail], weights=counts[fail], minlength=width).astype(np.int64)
        assert got.dtype == np.int64 and np.array_equal(got, want)
