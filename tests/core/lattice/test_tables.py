"""The class-table cache: smallest table below a node, bounded size, dense projection tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from core.lattice.tables import TableCache, combined_classes, projection_table


def _tab(rows: int, width: int = 3) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((rows, width), np.int32), np.ones(rows, np.int64)


def test_below_picks_the_smallest_table_under_the_node() -> None:
    cache = TableCache(3, max_cells=10_000)
    cache.add((0, 1, 0), *_tab(50))
    cache.add((1, 1, 0), *_tab(20))
    cache.add((2, 2, 2), *_tab(2))  # not below (1, 1, 1)
    found = cache.below((1, 1, 1), limit=100)
    assert found is not None
    src, _, cnt = found
    assert src == (1, 1, 0) and len(cnt) == 20
    assert cache.below((1, 1, 1), limit=20) is None  # nothing smaller than the limit
    assert cache.below((0, 0, 0), limit=100) is None


def test_oldest_tables_are_evicted_beyond_the_cell_budget() -> None:
    cache = TableCache(2, max_cells=300)
    for i in range(200):  # forces the slot arrays to grow too
        cache.add((i, 0), *_tab(40))
        assert cache.cells <= 300 or len(cache.tables) == 1
    assert (199, 0) in cache and (0, 0) not in cache
    found = cache.below((500, 0), limit=1000)
    assert found is not None and found[0][0] >= 197


def test_projection_table_counts_distinct_leaf_combinations() -> None:
    bottom = np.array([[0, 1, 2, 0], [0, 1, 3, 1], [1, 0, 2, 1], [0, 2, 2, 0]], np.int32)  # 3 QIs + sensitive
    counts = np.array([2, 3, 4, 5], np.int64)
    table = projection_table(bottom, counts, attrs=[0, 2], sizes=[2, 4, 2], extra=1)
    assert table is not None
    tab, cnt = table
    got = {tuple(r): int(c) for r, c in zip(tab.tolist(), cnt, strict=True)}
    # QI 1 is at the top (code 0); rows 0 and 3 share (0, *, 2, s=0).
    assert got == {(0, 0, 2, 0): 7, (0, 0, 3, 1): 3, (1, 0, 2, 1): 4}


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_combined_classes_are_first_appearance_ids_of_the_code_tuples(data: st.DataObject) -> None:
    """Against pandas on the code tuples: the same ids (first appearance) when the key space is sparse, the
    same partition when it is dense; the key space picks int32 or int64 keys and, past 2**62, a re-factorized
    key (sizes up to 2**40 a QI reach both)."""
    m = data.draw(st.integers(1, 300))
    d = data.draw(st.integers(1, 5))
    sizes = data.draw(st.lists(st.sampled_from([1, 2, 3, 7, 1_000, 2**20, 2**40]), min_size=d, max_size=d))
    codes = [np.asarray(data.draw(st.lists(st.integers(0, min(s, 50) - 1), min_size=m, max_size=m)),
                        dtype=data.draw(st.sampled_from([np.int32, np.int64]))) for s in sizes]
    cls, space = combined_classes(codes, sizes, m)
    assert cls.dtype == np.int64 and len(cls) == m and cls.min() >= 0 and cls.max() < space
    oracle = pd.MultiIndex.from_arrays([c.astype(np.int64) for c in codes]).factorize()[0]
    # the same partition: equal tuples share an id, different tuples do not
    assert len(set(zip(cls.tolist(), oracle.tolist(), strict=True))) == len(set(oracle.tolist()))
    assert len(set(cls.tolist())) == len(set(oracle.tolist()))
    if math.prod(sizes) > 4 * m + 1024:  # a sparse key space is factorized: ids by first appearance
        assert space == len(set(oracle.tolist())) and np.array_equal(cls, oracle)
