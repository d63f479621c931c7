"""random: the KGEN paper's random-search baseline under an evaluation budget."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.encoding import Schema, encode
from core.engines.base import Release
from core.engines.fulldomain.random_search import RandomSearchParams
from core.engines.registry import get_engine, make_params
from core.errors import InfeasibleError, ParamsError
from core.lattice import NodeEvaluator
from core.schema import parse_spec
from core.verify import verify_release
from tests.strategies import small_schema, small_tables

ADULT5 = ["sex", "age", "race", "marital-status", "education"]


def run(frame: pd.DataFrame, schema: Schema, params: dict[str, Any], seed: int = 0, engine: str = "random") -> Release:
    eng = get_engine(engine)
    return eng.anonymize(encode(frame, schema), make_params(eng, params), np.random.default_rng(seed))


@pytest.fixture(scope="module")
def adult_small(adult_df: pd.DataFrame, adult_schema: Schema) -> tuple[pd.DataFrame, Schema]:
    """1,500 Adult rows, 5 QIs: a 240-node lattice."""
    return adult_df.sample(1500, random_state=2), adult_schema.restrict(ADULT5)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=small_tables(), k=st.integers(2, 5), supp=st.sampled_from([0.0, 0.05, 0.2]),
       budget=st.integers(1, 40), seed=st.integers(0, 2**16))
def test_release_always_verifies_within_suppression_limit(frame: pd.DataFrame, k: int, supp: float, budget: int,
                                                          seed: int) -> None:
    schema = small_schema()
    params = {"k": k, "max_suppression": supp, "max_evaluations": budget}
    try:
        rel = run(frame, schema, params, seed)
    except InfeasibleError:
        batch = encode(frame, schema)
        assert not NodeEvaluator(batch, make_params("random", params).requirement()).evaluate(
            tuple(batch.heights)).feasible
        return
    report = verify_release(frame, rel, schema)
    assert report.ok, report.failures
    assert report.k >= k
    assert len(rel.suppressed) <= int(np.floor(supp * len(frame) + 1e-9))
    # memoized: distinct nodes at most the draws (plus the top node as last resort)
    assert rel.diagnostics["nodes_evaluated"] <= budget + 1


def test_large_budget_finds_exhaustive_optimum_for_most_seeds(adult_small: tuple[pd.DataFrame, Schema]) -> None:
    frame, schema = adult_small
    common = {"k": 5, "max_suppression": 0.02, "objective": "precision"}
    opt = run(frame, schema, common, engine="exhaustive").diagnostics["objective_value"]
    # 1,000 uniform draws on 240 nodes miss a given node with probability (239/240)^1000 < 2 %
    losses = [run(frame, schema, {**common, "max_evaluations": 1000}, s).diagnostics["objective_value"]
              for s in range(15)]
    assert all(x >= opt - 1e-9 for x in losses)
    assert sum(abs(x - opt) < 1e-9 for x in losses) >= 12
    # a tiny budget is a genuine sample: feasible, never better than the optimum
    small = [run(frame, schema, {**common, "max_evaluations": 5}, s) for s in range(10)]
    assert all(r.diagnostics["objective_value"] >= opt - 1e-9 for r in small)
    assert all(r.diagnostics["nodes_evaluated"] <= 6 for r in small)


def test_same_seed_same_result(adult_small: tuple[pd.DataFrame, Schema]) -> None:
    frame, schema = adult_small
    a, b = (run(frame, schema, {"k": 5, "max_evaluations": 40}, 11) for _ in range(2))
    assert a.diagnostics["levels"] == b.diagnostics["levels"]
    assert a.diagnostics["nodes_evaluated"] == b.diagnostics["nodes_evaluated"]
    assert list(a.suppressed) == list(b.suppressed)


def test_falls_back_to_top_when_no_draw_is_feasible() -> None:
    # all rows distinct in x and y: only the top node (everything "*") is 3-anonymous
    frame = pd.DataFrame({"x": np.arange(12) * 10, "y": np.arange(12) * 7})
    spec = parse_spec({"qi": [{"name": c, "type": "numeric", "hierarchy": {"widths": [1], "domain": [0, 200]}}
                              for c in ("x", "y")]})
    schema = Schema.from_spec(spec)
    rel = run(frame, schema, {"k": 3, "max_suppression": 0, "max_evaluations": 2}, seed=0)
    assert list(rel.diagnostics["levels"].values()) == [2, 2]
    assert verify_release(frame, rel, schema).ok
    with pytest.raises(InfeasibleError):
        run(frame, schema, {"k": 13, "max_evaluations": 3})


@pytest.mark.parametrize(("values", "field"), [
    ({"max_evaluations": 0}, "max_evaluations"),
    ({"max_suppression": 1.5}, "max_suppression"),
    ({"preprocessing": "x"}, "preprocessing"),
    ({"population": 10}, "population"),
])
def test_out_of_range_params_are_clear_errors(values: dict[str, Any], field: str) -> None:
    with pytest.raises(ParamsError, match=field):
        make_params("random", values)


def test_defaults_match_the_kgen_paper() -> None:
    p = make_params("random", {})
    assert isinstance(p, RandomSearchParams)
    assert (p.max_evaluations, p.max_suppression, p.objective) == (5000, 0.005, "precision")
