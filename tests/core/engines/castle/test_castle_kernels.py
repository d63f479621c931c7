"""CASTLE's cluster-join kernel with the level climb hoisted out (``join_il_lca``) against the general one."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.encoding import encode
from core.engines.castle.kernels import join_il, join_il_lca, join_one
from core.engines.castle.space import HULL_EPS, Space
from tests.strategies import make_table, small_schema

SCHEMA = small_schema()


def _clusters(space: Space, leaves: np.ndarray, n: int,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` clusters, each the join of 1-4 random tuples (so lo, hi and lvl are consistent)."""
    lo = np.zeros((n, space.d), np.int32)
    hi, lvl = lo.copy(), lo.copy()
    for i in range(n):
        rows = rng.integers(0, len(leaves), int(rng.integers(1, 5)))
        lo[i] = hi[i] = leaves[rows[0]]
        for r in rows[1:]:
            join_one(lo[i], hi[i], lvl[i], leaves[r], leaves[r], np.zeros(space.d, np.int32), space.maps,
                     space.ordered)
    return lo, hi, lvl


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_lca_kernel_equals_the_climbing_kernel(seed: int) -> None:
    batch = encode(make_table(seed, 80), SCHEMA)
    space = Space.from_batch(batch)
    assert space.ordered.any() and space.tree.all()  # the table has an ordered QI banded in intervals
    leaves = batch.leaf_matrix.astype(np.int32)
    rng = np.random.default_rng(seed)
    lo, hi, lvl = _clusters(space, leaves, 40, rng)
    active = rng.random(40) < 0.8
    for j in range(5):  # a tuple, then clusters, joined with every cluster
        xlo, xhi, xlvl = (leaves[j], leaves[j], np.zeros(space.d, np.int32)) if j == 0 else (lo[j], hi[j], lvl[j])
        ref = join_il(lo, hi, lvl, active, xlo, xhi, xlvl, space.maps, space.cost, space.ordered, space.vals,
                      space.weights, HULL_EPS)
        for sp in (space, dataclasses.replace(space, ordered=space.ordered.copy())):
            sp.__dict__["tree"] = np.zeros(space.d, np.bool_) if sp is not space else sp.tree  # climb path too
            fast = join_il_lca(lo, hi, lvl, active, xlo, xhi, xlvl, sp.maps, sp.leafcost, sp.tree, sp.ordered,
                               sp.vals, sp.weights, HULL_EPS)
            assert np.array_equal(np.isinf(fast), ~active)
            assert np.allclose(fast[active], ref[active], rtol=0, atol=1e-12)


def test_an_ordered_qi_with_interleaved_nodes_is_not_treated_as_a_tree() -> None:
    batch = encode(make_table(3, 40), SCHEMA)
    space = Space.from_batch(batch)
    a = int(np.flatnonzero(space.ordered)[0])
    maps = space.maps.copy()
    maps[a, 1, :4] = [0, 1, 0, 1]  # a node whose leaves are not contiguous
    assert not dataclasses.replace(space, maps=maps).tree[a]
