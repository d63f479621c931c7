"""The wide-lattice path of ``optimal`` (one-pass evaluator, bitset node sets) finds the same optimum.

Lattices of over 4M nodes are searched with a DirectEvaluator and NodeSets indexed by bitsets
(core/lattice/nodeset.py), which also rank the members they return. Forcing that path on small
random tables must give the node, suppressed rows and loss of the default path, to the last bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core.lattice.nodeset as nodeset
from core.encoding import encode
from core.engines.fulldomain import optimal
from core.engines.registry import get_engine, make_params
from core.errors import InfeasibleError
from tests.strategies import small_schema, small_tables


def run(frame: pd.DataFrame, params: dict[str, Any], wide: bool) -> tuple[Any, ...]:
    """(levels, suppressed ids, loss) of the optimum, or the error, on the default or the wide path."""
    batch = encode(frame, small_schema())
    eng = get_engine("optimal")
    with pytest.MonkeyPatch.context() as mp:
        if wide:
            mp.setattr(optimal, "DIRECT_LATTICE", 0)
            mp.setattr(nodeset, "_MAX_BITMAP", 0)
        try:
            rel = eng.anonymize(batch, make_params(eng, params), np.random.default_rng(0))
        except InfeasibleError as exc:
            return ("infeasible", exc.reason)
    if wide:
        assert rel.diagnostics["search"]["popped"] >= 1
    return (tuple(rel.diagnostics["levels"].values()), tuple(rel.suppressed), rel.diagnostics["objective_value"])


@settings(max_examples=40, deadline=None)
@given(small_tables(min_rows=20, max_rows=120), st.sampled_from([2, 3, 5, 8]),
       st.sampled_from([0.0, 0.05, 0.2]), st.sampled_from(["lm", "precision"]))
def test_wide_path_finds_the_same_optimum(frame: pd.DataFrame, k: int, max_suppression: float,
                                          objective: str) -> None:
    params = {"k": k, "max_suppression": max_suppression, "objective": objective}
    assert run(frame, params, wide=True) == run(frame, params, wide=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=6), st.integers(1, 3))
def test_projection_count_counts_the_projection_nodes(heights: list[int], width: int) -> None:
    from core.lattice import Lattice

    lattice = Lattice(heights)
    expected = len(optimal.projection_nodes(lattice, width)) if width <= len(heights) else lattice.size
    assert optimal.projection_count(lattice.heights, width) == expected
