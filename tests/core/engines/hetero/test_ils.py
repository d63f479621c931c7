"""ILS: k-regular output, never worse than its start, incremental deltas equal from-scratch values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.encoding import Schema, encode
from core.engines.base import Release
from core.engines.hetero.data import HeteroData, hetero_data
from core.engines.hetero.fastgain import PRUNED, gcp_gain, prepare
from core.engines.hetero.graph import candidates, regular_from_clusters
from core.engines.hetero.ils import ILSParams
from core.engines.hetero.objective import matching_objective
from core.engines.hetero.runner import make_state
from core.engines.hetero.search import EPS, perturb
from core.engines.hetero.state import apply_move, feasible, move_gain
from core.engines.registry import get_engine, make_params
from core.errors import ParamsError
from core.schema import parse_spec
from core.verify import verify_release
from tests.core.engines.hetero.test_kmember_lgreedy import _table, label_gcp
from tests.strategies import small_schema, small_tables

SCHEMA = small_schema()
FIELDS = ("M", "W", "mn1", "mn2", "mx1", "mx2", "sm", "cnt", "ndist", "hist", "mxc", "rowcost", "rem", "remmax")


def run_ils(df: pd.DataFrame, schema: Schema = SCHEMA, seed: int = 0, **values: Any) -> Release:
    eng = get_engine("ils")
    values = {"time_limit": 0, "max_iterations": 30, "bands": "free", **values}  # the paper's labels and GCP
    return eng.anonymize(encode(df, schema), make_params(eng, values), np.random.default_rng(seed))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=small_tables(min_rows=8, max_rows=70), k=st.integers(2, 5), objective=st.sampled_from(["gcp", "sil"]),
       start=st.sampled_from(["kmember", "lgreedy"]), seed=st.integers(0, 2**16),
       search=st.sampled_from(["assign", "2opt"]), block_size=st.integers(2, 40))
def test_output_is_k_regular_and_never_worse_than_start(df: pd.DataFrame, k: int, objective: str, start: str, seed: int,
                                                        search: str, block_size: int) -> None:
    rel = run_ils(df, seed=seed, k=k, objective=objective, start=start, max_iterations=25, search=search,
                  block_size=block_size)
    report = verify_release(df, rel, SCHEMA)
    assert report.ok, report.failures
    assert report.k == k
    diag = rel.diagnostics
    assert diag["objective_value"] <= diag["start_objective"] + 1e-12
    if objective == "gcp":  # the k-regular start can only narrow the clusters' labels
        assert diag["start_objective"] <= diag["start_homogeneous_objective"] + 1e-12
    data = hetero_data(encode(df, SCHEMA))
    assert diag["objective_value"] == pytest.approx(matching_objective(data, diag["matching"], objective), abs=1e-9)
    assert rel.metrics[objective] == pytest.approx(diag["objective_value"], abs=1e-9)
    assert rel.metrics["gcp"] == pytest.approx(label_gcp(rel.rows, df), abs=1e-9)


def _random_state(df: pd.DataFrame, k: int, objective: str,
                  seed: int) -> tuple[HeteroData, tuple[np.ndarray, ...], tuple[np.ndarray, ...], np.random.Generator]:
    data = hetero_data(encode(df, SCHEMA))
    rng = np.random.default_rng(seed)
    cls = rng.permutation(np.arange(data.n) % max(data.n // k, 1))
    matches = regular_from_clusters(cls, k, rng)
    S, C = make_state(data, matches, objective)
    return data, S, C, rng


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=small_tables(min_rows=8, max_rows=40), k=st.integers(2, 6), objective=st.sampled_from(["gcp", "sil"]),
       seed=st.integers(0, 2**16), steps=st.integers(1, 60))
def test_incremental_delta_equals_from_scratch(df: pd.DataFrame, k: int, objective: str, seed: int, steps: int) -> None:
    data, S, C, rng = _random_state(df, k, objective, seed)
    if data.n < k:
        return
    norm = data.d * data.n
    before = matching_objective(data, S[0], objective)
    assert S[11].sum() / norm == pytest.approx(before, abs=1e-12)
    wo_lo, wo_hi, wo_nd = np.empty(data.dn), np.empty(data.dn), np.empty(data.dc, dtype=np.int64)
    applied = 0
    for _ in range(steps * 5):
        b, d = rng.integers(data.n, size=2)
        sa, sc = rng.integers(1, k, size=2)
        a, c = S[0][b, sa], S[0][d, sc]
        if not feasible(S[0], a, b, c, d):
            continue
        gain = move_gain(S, C, a, b, c, d)
        if objective == "gcp":  # the bounded fast path agrees whenever it does not prune
            prepare(S, C, b, a, wo_lo, wo_hi, wo_nd)
            fast = gcp_gain(S, C, a, b, c, d, S[12][b, sa], S[12][d, sc], wo_lo, wo_hi)
            assert (fast == PRUNED and gain <= EPS) or fast == pytest.approx(gain, abs=1e-9)
        apply_move(S, C, a, b, c, d)
        after = matching_objective(data, S[0], objective)
        assert (before - after) * norm == pytest.approx(gain, abs=1e-9)
        before = after
        applied += 1
        if applied == steps:
            break
    fresh, _ = make_state(data, S[0], objective)
    for name, x, y in zip(FIELDS, S, fresh, strict=True):
        if name == "hist":  # slot 0 (values with count 0) is not maintained by the fast path
            x, y = x[:, :, 1:], y[:, :, 1:]
        if name == "W":  # the same sets, possibly in another slot order
            x, y = np.sort(x, axis=1), np.sort(y, axis=1)
        np.testing.assert_allclose(x, y, atol=1e-9, err_msg=name)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=small_tables(min_rows=10, max_rows=40), k=st.integers(2, 5), objective=st.sampled_from(["gcp", "sil"]),
       seed=st.integers(0, 2**16))
def test_perturbation_is_undone_exactly_from_its_log(df: pd.DataFrame, k: int, objective: str, seed: int) -> None:
    data, S, C, rng = _random_state(df, k, objective, seed)
    snapshot = [x.copy() for x in S]
    cand = candidates(data, 8, objective, rng)
    queue, inq, qlen = np.zeros(data.n, np.int64), np.zeros(data.n, np.bool_), np.zeros(1, np.int64)
    log, logn = np.zeros((50, 4), np.int64), np.zeros(1, np.int64)
    perturb(S, C, cand, 5, queue, inq, qlen, np.array([seed + 1], np.uint64), log, logn)
    for t in range(logn[0] - 1, -1, -1):
        a, b, c, d = log[t]
        apply_move(S, C, a, d, c, b)
    for name, x, y in zip(FIELDS, S, snapshot, strict=True):
        if name == "hist":
            x, y = x[:, :, 1:], y[:, :, 1:]
        np.testing.assert_allclose(x, y, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("search", ["assign", "2opt"])
@pytest.mark.parametrize("objective", ["gcp", "sil"])
def test_same_seed_and_budget_give_the_same_result(objective: str, search: str) -> None:
    df = _table(120, 11)
    a = run_ils(df, seed=5, k=4, objective=objective, max_iterations=300, search=search, block_size=30)
    b = run_ils(df, seed=5, k=4, objective=objective, max_iterations=300, search=search, block_size=30)
    assert (a.diagnostics["matching"] == b.diagnostics["matching"]).all()
    assert a.rows.equals(b.rows)
    assert a.diagnostics["objective_value"] == b.diagnostics["objective_value"]
    assert a.diagnostics["iterations"] == 300
    assert a.diagnostics["budget_cap_hit"] is False and b.diagnostics["budget_cap_hit"] is False
    if search == "assign":
        assert a.diagnostics["assign_passes"] == b.diagnostics["assign_passes"] > 0


def test_paper_search_runs_no_assignment_phase_and_assign_search_reports_it() -> None:
    df = _table(150, 3)
    paper = run_ils(df, seed=1, k=5, search="2opt")
    assert paper.diagnostics["search"] == "2opt" and "assign_passes" not in paper.diagnostics
    ours = run_ils(df, seed=1, k=5, search="assign", block_size=40, passes=6)
    diag = ours.diagnostics
    assert diag["assign_passes"] <= 6 and diag["construction_objective"] is not None
    assert diag["assign_objective"] <= min(diag["start_objective"], diag["construction_objective"]) + 1e-12
    assert diag["objective_value"] <= diag["assign_objective"] + 1e-12  # the 2-opt ILS only improves on it
    assert verify_release(df, ours, SCHEMA).ok


def test_variants_stay_valid_and_improve() -> None:
    df = _table(90, 4)
    for values in ({"neighbourhood": "full"}, {"slack": 0.05}, {"perturbation": 6, "candidates": 4},
                   {"start": "mondrian"}, {"time_limit": 0.3, "max_iterations": None},
                   {"search": "2opt"}, {"search": "assign", "assign_share": 0.0}, {"block_size": 2}):
        rel = run_ils(df, seed=2, k=3, **values)
        assert verify_release(df, rel, SCHEMA).ok, values
        diag = rel.diagnostics
        assert diag["objective_value"] <= diag["start_objective"] + 1e-12, values
        assert diag["objective_value"] < diag["start_homogeneous_objective"], values


def test_k_one_releases_the_original_values() -> None:
    df = _table(15, 2)
    rel = run_ils(df, k=1)
    assert verify_release(df, rel, SCHEMA).ok
    assert (rel.rows["age"].astype(int).to_numpy() == df["age"].to_numpy()).all()
    assert rel.metrics["gcp"] == 0.0


@pytest.mark.parametrize("duplicates", [False, True])
def test_candidates_are_the_nearest_rows(duplicates: bool) -> None:
    df = _table(60, 9)
    if duplicates:  # few distinct rows: candidates come from groups of identical rows
        df["age"] = df["age"] % 3 + 20
        df["color"] = df["color"].where(df.index % 2 == 0, "red")
    data = hetero_data(encode(df, SCHEMA))
    cand = candidates(data, 7, "gcp", np.random.default_rng(0))
    wn, wc = data.pair_weights("gcp")
    dist = (np.abs(data.xn[:, None, :] - data.xn[None, :, :]) * wn).sum(axis=2) \
        + ((data.xc[:, None, :] != data.xc[None, :, :]) * wc).sum(axis=2)
    np.fill_diagonal(dist, np.inf)
    for i in range(data.n):
        assert i not in cand[i] and len(set(cand[i])) == 7
        np.testing.assert_allclose(np.sort(dist[i, cand[i]]), np.sort(dist[i])[:7], atol=1e-6)


def test_params_are_checked() -> None:
    eng = get_engine("ils")
    with pytest.raises(ValueError, match="needs a stop"):  # no iteration budget and no cap
        ILSParams(time_limit=0, max_iterations=None)
    with pytest.raises(ParamsError):
        eng.anonymize(encode(_table(20, 1), SCHEMA), make_params(eng, {"k": 3, "l": 2}), np.random.default_rng(0))
    with pytest.raises(ParamsError):
        make_params(eng, {"objective": "lm"})


def test_dates_masked_and_tabled_values_become_ranges_and_sets() -> None:
    spec = parse_spec({"name": "d", "qi": [
        {"name": "day", "type": "date"}, {"name": "zip", "type": "masked", "hierarchy": {"mask": 4}},
        {"name": "age", "type": "numeric", "hierarchy": {"auto": 3}},
        {"name": "grade", "type": "numeric", "hierarchy": {"rows": [["1", "low"], ["2", "low"], ["3", "high"]]}}]})
    schema = Schema.from_spec(spec)
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"day": pd.date_range("2021-01-01", periods=200, freq="D").strftime("%Y-%m-%d")[
        rng.integers(0, 200, 50)], "zip": rng.choice(["8001", "8002", "8100"], 50),
        "age": rng.normal(40, 10, 50).round(1), "grade": rng.choice(["1", "2", "3"], 50)})
    nested = run_ils(df, schema=schema, k=3, bands="nested", nesting_fallback=False)  # nodes: 'low', '80**', a month
    assert verify_release(df, nested, schema).ok
    assert set(nested.rows["grade"]) <= {"1", "2", "3", "low", "high", "*"}
    rel = run_ils(df, schema=schema, k=3)
    report = verify_release(df, rel, schema)
    assert report.ok, report.failures
    assert rel.rows["day"].str.match(r"^\[\d{4}-\d\d-\d\d, \d{4}-\d\d-\d\d\]$").any()  # closed date ranges
