"""Property tests over every registered engine on random small tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.encoding import encode
from core.engines.base import EngineParams
from core.engines.registry import engine_names, get_engine, make_params
from core.errors import InfeasibleError
from core.lattice import Lattice, NodeEvaluator
from core.lattice.direct import DirectEvaluator
from core.verify import verify_release
from tests.strategies import OFFENCES, make_table, small_schema, small_tables

SCHEMA = small_schema()
SEVERITY = {o: i + 1 for i, o in enumerate(OFFENCES)}  # small_schema's severity table
# Work budgets only (time_limit = 0: no wall-clock cap), so a run does the same work however busy the
# machine is and whether or not its kernels were loaded yet. make_params refuses a misspelt key.
FAST = {"ils": {"max_iterations": 200, "time_limit": 0}, "kgen": {"max_evaluations": 300},
        "random": {"max_evaluations": 200}, "cg-kanon": {"time_limit": 0}, "cg-diverse": {"time_limit": 0},
        "pbg-ea": {"iterations": 10}, "local-recode": {"iterations": 10}}


def _params(name: str, values: dict) -> dict:
    return {**values, **FAST.get(name, {})}


def release_exists(name: str, params: EngineParams, df: pd.DataFrame) -> bool:
    """Whether any release of ``df`` can meet ``params``, decided from the table alone (no engine).

    Every engine can generalize every QI to the top of its hierarchy (full-domain engines: the top
    node; Mondrian: no cut; clustering and CG engines: one class of all rows), giving one class of all
    n rows with nothing suppressed. Any other release has classes no larger and no more diverse than
    that one and, below a suppression limit of 1, releases something. So a release exists exactly when
    the one class of all rows meets the request:

    * n >= k_min, where k_min = max(k, ceil(1 / max_risk)), and for the CG engines also at least the
      smallest severity in the table (their eq. 4);
    * at least l distinct sensitive values in the whole table, when l > 1 is asked (cg-diverse always
      asks: its l defaults to 3);
    * 1 / n <= avg_risk (one class over n released rows is the lowest average risk).
    """
    assert params.max_suppression < 1 and params.t is None and params.l_kind == "distinct"
    n = len(df)
    k_min = params.k
    if params.max_risk is not None:
        k_min = max(k_min, math.ceil(1 / params.max_risk - 1e-9))
    if name.startswith("cg-"):
        k_min = max(k_min, min(SEVERITY[o] for o in df["offence"]) if n else 0)
    if n < k_min:
        return False
    if params.l is not None and params.l > 1 and df["offence"].nunique() < params.l:
        return False
    return params.avg_risk is None or n * params.avg_risk >= 1 - 1e-12


def test_release_exists_decides_from_the_table_alone() -> None:
    five = make_table(1, 5)
    assert release_exists("optimal", make_params("optimal", {"k": 5}), five)
    assert not release_exists("optimal", make_params("optimal", {"k": 6}), five)
    assert not release_exists("optimal", make_params("optimal", {"k": 2, "max_risk": 0.1}), five)  # k_min 10
    assert not release_exists("optimal", make_params("optimal", {"k": 2, "avg_risk": 0.1}), five)  # 1/5 > 0.1
    one_offence = make_table(1, 30, offences=1)
    assert release_exists("mondrian", make_params("mondrian", {"k": 5}), one_offence)
    assert not release_exists("mondrian", make_params("mondrian", {"k": 5, "l": 2}), one_offence)
    assert not release_exists("cg-diverse", make_params("cg-diverse", {"k": 2}), make_table(1, 30, offences=2))
    only_vandalism = five.assign(offence="Vandalism")  # severity 5: the CG engines need 5 rows
    assert release_exists("cg-kanon", make_params("cg-kanon", {"k": 2}), only_vandalism)
    assert not release_exists("cg-kanon", make_params("cg-kanon", {"k": 2}), only_vandalism.head(4))


@pytest.mark.parametrize("name", engine_names())
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=small_tables(min_rows=1, few_offences=True), k=st.integers(2, 5), use_l=st.booleans())
def test_every_engine_meets_the_requirement(name: str, df: pd.DataFrame, k: int, use_l: bool) -> None:
    """An engine releases every table that can be released, and its release verifies; it refuses only
    tables that no release of could meet the request (:func:`release_exists`)."""
    eng = get_engine(name)
    values = {"k": k, "max_suppression": 0.1}
    if use_l and "l" in eng.models:
        values["l"] = 2
    params = make_params(eng, _params(name, values))
    try:
        rel = eng.anonymize(encode(df, SCHEMA), params, np.random.default_rng(1))
    except InfeasibleError as exc:
        assert not release_exists(name, params, df), f"{name} refused a feasible table: {exc}"
        return
    assert release_exists(name, params, df)
    report = verify_release(df, rel, SCHEMA)
    assert report.ok, report.failures
    assert report.k >= k
    if params.l is not None and params.l > 1:
        assert report.l_distinct is not None and report.l_distinct >= params.l


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=small_tables(), k=st.integers(2, 6), supp=st.sampled_from([0.0, 0.05, 0.2]), use_l=st.booleans())
def test_optimal_matches_exhaustive(df: pd.DataFrame, k: int, supp: float, use_l: bool) -> None:
    batch = encode(df, SCHEMA)
    values = {"k": k, "max_suppression": supp, "l": 2 if use_l else None}
    try:
        opt = get_engine("optimal").anonymize(batch, make_params("optimal", values), np.random.default_rng(0))
    except InfeasibleError:
        ev = NodeEvaluator(batch, make_params("optimal", values).requirement())
        assert not any(ev.evaluate(tuple(n)).feasible for n in Lattice(batch.heights).all_nodes())
        return
    ex = get_engine("exhaustive").anonymize(batch, make_params("exhaustive", values), np.random.default_rng(0))
    assert opt.diagnostics["objective_value"] == pytest.approx(ex.diagnostics["objective_value"], abs=1e-9)


@settings(max_examples=20, deadline=None)
@given(df=small_tables(), k=st.integers(2, 6), use_l=st.booleans())
def test_numba_and_numpy_evaluators_agree(df: pd.DataFrame, k: int, use_l: bool) -> None:
    batch = encode(df, SCHEMA)
    req = make_params("optimal", {"k": k, "max_suppression": 0.1, "l": 2 if use_l else None}).requirement()
    fast, ref = NodeEvaluator(batch, req, backend="numba"), NodeEvaluator(batch, req, backend="numpy")
    direct = DirectEvaluator(batch, req)  # one pass over the distinct rows (k only)
    early = DirectEvaluator(batch, req)  # feasibility passes that may stop early
    probe = NodeEvaluator(batch, req, backend="numpy")  # feasibility from class sizes alone where that says no
    for node in Lattice(batch.heights).all_nodes()[::7]:
        a, b, c = fast.evaluate(tuple(node)), ref.evaluate(tuple(node)), direct.evaluate(tuple(node))
        assert early.exceeds_suppression(tuple(node)) == ref.monotone_infeasible(b)
        assert probe.exceeds_suppression(tuple(node)) == ref.monotone_infeasible(b)
        assert probe.evaluate(tuple(node)) == b  # a node probed, then evaluated whole: the same result
        for x in (a, c):
            assert (x.feasible, x.suppressed, x.classes, x.k) == (b.feasible, b.suppressed, b.classes, b.k)
            assert x.loss == b.loss and x.gen_loss == b.gen_loss  # summed the same way by every evaluator
    assert probe.evaluations == ref.evaluations  # each node counted once, probed or not


@pytest.mark.parametrize("name", engine_names())
def test_same_seed_same_release(name: str) -> None:
    """Work budgets only (FAST): the first run in a process (kernels loading) does the same work as the second."""
    df = make_table(11, 40)
    eng = get_engine(name)
    params = make_params(eng, _params(name, {"k": 3, "max_suppression": 0.1}))
    assert release_exists(name, params, df)  # so every engine must release it
    a = eng.anonymize(encode(df, SCHEMA), params, np.random.default_rng(7))
    b = eng.anonymize(encode(df, SCHEMA), params, np.random.default_rng(7))
    for rel in (a, b):
        if "time_limit" in eng.Params.model_fields:  # an engine with a wall-clock safety cap says if it bound
            assert rel.diagnostics["budget_cap_hit"] is False
        assert rel.diagnostics.get("budget_cap_hit", False) is False
    assert a.rows.equals(b.rows)
    assert a.digest() == b.digest()  # rows, class ids and suppressed rows
