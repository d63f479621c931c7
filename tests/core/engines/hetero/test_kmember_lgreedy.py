"""k-member and l-greedy: homogeneous clusters with range / set labels, verified in k-regular mode."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.encoding import encode
from core.engines.base import Release
from core.engines.hetero.data import hetero_data
from core.engines.hetero.graph import inverse, regular_from_clusters
from core.engines.hetero.objective import clustering_gcp, clustering_sil
from core.engines.registry import get_engine, make_params
from core.errors import InfeasibleError, ParamsError
from core.verify import verify_release
from tests.strategies import small_schema, small_tables

SCHEMA = small_schema()
QIS = SCHEMA.qi_names


def label_gcp(rows: pd.DataFrame, original: pd.DataFrame) -> float:
    """GCP recomputed from the released labels alone (ILS paper eq. 1-4)."""
    total = 0.0
    for name in QIS:
        labels = rows[name].astype(str)
        if name == "age":
            vals = pd.to_numeric(original[name])
            span = vals.max() - vals.min()
            inner = labels.str.strip("[]").str.split(", ", expand=True)  # closed ranges [lo, hi]
            lo = pd.to_numeric(inner[0])
            hi = pd.to_numeric(inner[1]) if inner.shape[1] > 1 else lo
            hi = hi.fillna(lo)
            total += ((hi - lo) / span).sum() if span > 0 else 0.0
        else:
            m = original[name].astype(str).nunique()
            size = labels.map(lambda s: len(s.strip("{}").split(",")) if s.startswith("{") else 1)
            total += ((size - 1) / (m - 1)).sum() if m > 1 else 0.0
    return total / (len(QIS) * len(rows))


@pytest.mark.parametrize("name", ["kmember", "lgreedy"])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=small_tables(min_rows=6, max_rows=70), k=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_clusters_are_k_anonymous_and_verified(name: str, df: pd.DataFrame, k: int, seed: int) -> None:
    batch = encode(df, SCHEMA)
    eng = get_engine(name)
    if k > len(df):
        with pytest.raises(InfeasibleError):
            eng.anonymize(batch, make_params(eng, {"k": k}), np.random.default_rng(seed))
        return
    rel = eng.anonymize(batch, make_params(eng, {"k": k, "bands": "free"}), np.random.default_rng(seed))
    report = verify_release(df, rel, SCHEMA)
    assert report.ok, report.failures
    assert rel.verification_mode == "k-regular"
    # homogeneous: rows of a cluster share labels, and clusters have k .. 2k-1 rows
    sizes = np.bincount(rel.class_ids)
    sizes = sizes[sizes > 0]
    assert sizes.min() >= k and sizes.max() <= max(2 * k - 1, k)
    per_class = rel.rows[QIS].astype(str).groupby(rel.class_ids).nunique()
    assert (per_class == 1).all().all()
    assert rel.metrics["gcp"] == pytest.approx(label_gcp(rel.rows, df), abs=1e-9)
    data = hetero_data(batch)
    assert rel.metrics["sil"] == pytest.approx(clustering_sil(data, rel.class_ids), abs=1e-12)
    assert rel.metrics["gcp"] == pytest.approx(clustering_gcp(data, rel.class_ids), abs=1e-12)


@pytest.mark.parametrize("name", ["kmember", "lgreedy"])
def test_same_seed_same_release(name: str) -> None:
    df = _table(80, 3)
    batch = encode(df, SCHEMA)
    eng = get_engine(name)
    a = eng.anonymize(batch, make_params(eng, {"k": 4}), np.random.default_rng(7))
    b = eng.anonymize(batch, make_params(eng, {"k": 4}), np.random.default_rng(7))
    assert a.rows.equals(b.rows)
    assert (a.diagnostics["matching"] == b.diagnostics["matching"]).all()


@pytest.mark.parametrize("name", ["kmember", "lgreedy"])
def test_refuses_l_diversity(name: str) -> None:
    batch = encode(_table(30, 1), SCHEMA)
    eng = get_engine(name)
    with pytest.raises(ParamsError):
        eng.anonymize(batch, make_params(eng, {"k": 3, "l": 2}), np.random.default_rng(0))


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=8), k=st.integers(1, 6), seed=st.integers(0, 999))
def test_regular_from_clusters_is_k_regular_inside_clusters(sizes: list[int], k: int, seed: int) -> None:
    sizes = [s + k - 1 for s in sizes]  # every cluster has >= k rows
    cls = np.random.default_rng(seed).permutation(np.repeat(np.arange(len(sizes)), sizes))
    matches = regular_from_clusters(cls, k, np.random.default_rng(seed))
    n = len(cls)
    assert matches.shape == (n, k)
    assert (matches[:, 0] == np.arange(n)).all()
    assert (np.bincount(matches.ravel(), minlength=n) == k).all()
    assert (np.diff(np.sort(matches, axis=1), axis=1) > 0).all()
    assert (cls[matches] == cls[:, None]).all()
    w = inverse(matches)
    assert (w[:, 0] == np.arange(n)).all()
    assert all(set(np.flatnonzero((matches == a).any(axis=1))) == set(w[a]) for a in range(n))


def test_regular_from_clusters_rejects_small_cluster() -> None:
    with pytest.raises(InfeasibleError):
        regular_from_clusters(np.array([0, 0, 1]), 2, np.random.default_rng(0))


def test_verifier_catches_tampering() -> None:
    df = _table(40, 5)
    rel = get_engine("kmember").anonymize(encode(df, SCHEMA), make_params("kmember", {"k": 3}),
                                          np.random.default_rng(0))
    assert verify_release(df, rel, SCHEMA).ok
    # a 3-regular release is 2-anonymous but not 4-anonymous
    assert verify_release(df, rel, SCHEMA, make_params("kmember", {"k": 2}).requirement()).k == 3
    assert not verify_release(df, rel, SCHEMA, make_params("kmember", {"k": 4}).requirement()).ok
    # a label that no longer covers its rows
    rows = rel.rows.copy()
    rows.loc[rows.index[0], "age"] = "[200, 300]"
    bad = _with(rel, rows=rows)
    assert any("age" in f for f in verify_release(df, bad, SCHEMA).failures)
    # a set label that misses a value
    rows = rel.rows.copy()
    rows.loc[rows.index[0], "color"] = "{nothing,here}"
    assert any("color" in f for f in verify_release(df, _with(rel, rows=rows), SCHEMA).failures)
    # a graph that is not k-regular
    m = rel.diagnostics["matching"].copy()
    m[1] = m[0]
    rep = verify_release(df, _with(rel, diagnostics={**rel.diagnostics, "matching": m}), SCHEMA)
    assert not rep.ok
    # an altered sensitive value
    rows = rel.rows.copy()
    rows["offence"] = rows["offence"].iloc[::-1].to_numpy()
    if not (rows["offence"].to_numpy() == rel.rows["offence"].to_numpy()).all():
        assert any("offence" in f for f in verify_release(df, _with(rel, rows=rows), SCHEMA).failures)
    # too few matches for the requirement
    rep = verify_release(df, _with(rel, diagnostics={**rel.diagnostics, "matching": m[:, :2]}), SCHEMA)
    assert not rep.ok


def _with(rel: Release, **changes: Any) -> Release:
    from dataclasses import replace

    return replace(rel, **changes)


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "name": [f"p{i}" for i in range(n)], "age": rng.integers(15, 80, n),
        "color": rng.choice(["red", "orange", "yellow", "blue", "green", "purple"], n),
        "shape": rng.choice(["circle", "oval", "square", "triangle", "hexagon"], n),
        "zip": rng.choice(["801", "802", "811", "812", "900"], n),
        "offence": rng.choice(["Theft", "Robbery", "Fraud", "Assault", "Vandalism"], n),
    })
