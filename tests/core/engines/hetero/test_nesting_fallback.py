"""Nested bands with a per-QI fallback (issue 39): on a small table with skewed ages and a skewed
category, kmember, lgreedy and ils keep every nested QI within 1.25x its free loss, and release the QIs
over it as free ranges / sets, named in ``diagnostics["nesting_fallback"]``; the verifier passes and the
release is the same for the same seed. Mondrian does the same for numeric QIs on its own classes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.encoding import Schema, encode
from core.engines.base import Release
from core.engines.nesting import NOISE, TARGET, label_qi_loss, utility_with_nesting
from core.engines.registry import get_engine, make_params
from core.hierarchies.intervals import range_label
from core.schema import parse_spec
from core.verify import verify_release

SUBURBS = {"north": ["n1", "n2", "n3", "n4"], "south": ["s1", "s2", "s3", "s4"], "west": ["w1", "w2", "w3", "w4"]}
SCHEMA = Schema.from_spec(parse_spec({"name": "skewed", "qi": [
    {"name": "age", "type": "numeric", "hierarchy": {"widths": [5, 10, 20, 40], "domain": [0, 120], "integer": True}},
    {"name": "sex", "type": "categorical", "hierarchy": {"rows": [["F", "*"], ["M", "*"], ["X", "*"]]}},
    {"name": "suburb", "type": "categorical", "hierarchy": {"tree": SUBURBS}},
]}))
FAST = {"ils": {"max_iterations": 30, "passes": 4, "time_limit": 0}}
HETERO = ["kmember", "lgreedy", "ils"]


def skewed(n: int = 240, seed: int = 4) -> pd.DataFrame:
    """Most ages 18-35, a long tail to 95; 93 % M; suburbs Zipf-distributed (exponent 1.5)."""
    rng = np.random.default_rng(seed)
    tail = np.minimum(36 + np.floor(rng.exponential(10, n)), 95)
    names = [s for group in SUBURBS.values() for s in group]
    w = 1.0 / np.arange(1, len(names) + 1) ** 1.5
    return pd.DataFrame({
        "age": np.where(rng.random(n) < 0.85, rng.integers(18, 36, n), tail).astype(np.int64),
        "sex": np.where(rng.random(n) < 0.93, "M", "F"), "suburb": rng.choice(names, n, p=w / w.sum())})


def over_target(nested: float, free: float) -> bool:
    """The issue's test: nested loss above 1.25x the free loss (and by more than noise)."""
    return nested > TARGET * free and nested - free > NOISE


def run(name: str, df: pd.DataFrame, seed: int = 0, **values: object) -> Release:
    eng = get_engine(name)
    params = make_params(eng, {"k": 4, **FAST.get(name, {}), **values})
    return eng.anonymize(encode(df, SCHEMA), params, np.random.default_rng(seed))


def free_form(name: str, df: pd.DataFrame, rel: Release, q: str) -> pd.Series:
    """The oracle of a QI released free: per released row, the range / set of the input rows it generalizes."""
    if name == "ils":  # heterogeneous: a row's label covers its matches
        matches = list(np.asarray(rel.diagnostics["matching"]))
    else:  # homogeneous: a row's label covers its whole class
        cls = np.asarray(rel.class_ids)
        matches = [np.flatnonzero(cls == cls[i]) for i in range(len(df))]
    vals = df[q].to_numpy()
    out = []
    for m in matches:
        v = np.unique(vals[np.asarray(m)])
        if q == "age":
            out.append(range_label(float(v.min()), float(v.max())))
        else:
            out.append(v[0] if len(v) == 1 else "{" + ",".join(sorted(v)) + "}")
    return pd.Series(out, index=rel.rows.index)


@pytest.mark.parametrize("name", HETERO)
def test_each_qi_within_target_or_released_free_and_named(name: str) -> None:
    df = skewed()
    batch = encode(df, SCHEMA)
    free = run(name, df, bands="free")
    strict = run(name, df, nesting_fallback=False)
    rel = run(name, df)
    assert verify_release(df, rel, SCHEMA).ok
    free_loss, strict_loss = label_qi_loss(batch, free.rows), label_qi_loss(batch, strict.rows)
    loss = label_qi_loss(batch, rel.rows)
    fallback = rel.diagnostics["nesting_fallback"]
    over = [q for q in SCHEMA.qi_names if over_target(strict_loss[q], free_loss[q])]
    assert over, "the skewed table is meant to push some QI over the target"
    first = max(over, key=lambda q: strict_loss[q] - free_loss[q])
    assert first in fallback  # the QI that lost most with nested labels fell back
    if name == "ils":  # a whole search per round: every QI over the target falls back at once
        assert set(over) <= set(fallback)
    for q in SCHEMA.qi_names:
        if q in fallback:
            entry = fallback[q]
            assert entry["free_loss"] == pytest.approx(free_loss[q], abs=1e-6)
            assert entry["nested_loss"] > TARGET * entry["free_loss"]
            assert entry["released_as"] == "free" and entry["why"]
            assert (rel.rows[q].astype(str) == free_form(name, df, rel, q)).all()  # the free labels, not nodes
        else:
            assert loss[q] <= TARGET * free_loss[q] or loss[q] - free_loss[q] <= NOISE, (q, loss[q], free_loss[q])
    if len(fallback) < len(SCHEMA.qi_names):  # a QI left nested keeps the hierarchy's labels
        nodes = {q.name: {str(lab) for lv in q.labels for lab in lv} for q in batch.qis}
        for q in set(SCHEMA.qi_names) - set(fallback):
            assert set(rel.rows[q].astype(str)) <= nodes[q] | {"*"} or q == "age"


@pytest.mark.parametrize("name", HETERO)
def test_fallback_is_deterministic_per_seed(name: str) -> None:
    df = skewed(seed=7)
    a, b = run(name, df, seed=11), run(name, df, seed=11)
    pd.testing.assert_frame_equal(a.rows, b.rows)
    assert a.diagnostics["nesting_fallback"] == b.diagnostics["nesting_fallback"]


def test_strict_nesting_reports_nothing_and_free_bands_are_unchanged() -> None:
    df = skewed()
    assert "nesting_fallback" not in run("kmember", df, nesting_fallback=False).diagnostics
    pd.testing.assert_frame_equal(run("kmember", df, bands="free").rows, run("kmember", df, bands="free").rows)


def test_mondrian_relabels_a_numeric_qi_over_the_target_with_class_ranges() -> None:
    df = skewed(n=400, seed=2)
    batch = encode(df, SCHEMA)
    free, rel = run("mondrian", df, bands="free"), run("mondrian", df)
    strict = run("mondrian", df, nesting_fallback=False)
    assert verify_release(df, rel, SCHEMA).ok
    free_loss, strict_loss = label_qi_loss(batch, free.rows), label_qi_loss(batch, strict.rows)
    fallback = rel.diagnostics["nesting_fallback"]
    over = {q for q in SCHEMA.qi_names if over_target(strict_loss[q], free_loss[q])}
    assert set(fallback) == over  # every QI over the target is named, and only those
    np.testing.assert_array_equal(rel.class_ids, strict.class_ids)  # the same classes
    for q, entry in fallback.items():
        if q == "age":
            assert entry["released_as"] == "free"
            assert (rel.rows["age"].astype(str) == free_form("mondrian", df, rel, "age")).all()
        else:
            assert entry["released_as"] == "nested" and "kept nested" in entry["why"]
            assert (rel.rows[q] == strict.rows[q]).all()


def test_utility_report_carries_the_fallback() -> None:
    rel = run("kmember", skewed())
    utility = utility_with_nesting({"qis": {}}, rel)
    assert utility.get("nesting_fallback") == (rel.diagnostics["nesting_fallback"] or None)
