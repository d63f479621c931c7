"""Hypothesis properties of the risk models."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.encoding import encode
from core.engines.registry import get_engine, make_params
from core.errors import InfeasibleError
from core.risk import risk_profile
from core.risk.classes import class_index
from core.risk.population import uniqueness, zayatz
from tests.core.engines.test_property import release_exists
from tests.strategies import small_schema, small_tables

SCHEMA = small_schema()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=small_tables(), k=st.integers(2, 6), engine=st.sampled_from(["optimal", "mondrian", "datafly"]))
def test_prosecutor_risk_of_a_release_is_at_most_one_over_k(df: pd.DataFrame, k: int, engine: str) -> None:
    eng = get_engine(engine)
    params = make_params(eng, {"k": k, "max_suppression": 0.1})
    try:
        rel = eng.anonymize(encode(df, SCHEMA), params, np.random.default_rng(0))
    except InfeasibleError:
        assert not release_exists(engine, params, df)  # refusing is allowed only when nothing could be released
        assume(False)
    prof = risk_profile(rel.rows, SCHEMA.qi_names, original=df, sensitive=SCHEMA.sensitive)
    assert prof.prosecutor.highest <= 1 / k + 1e-12
    assert prof.prosecutor.average <= prof.prosecutor.highest
    assert prof.sample_uniques == 0.0


@settings(max_examples=50, deadline=None)
@given(df=small_tables(min_rows=2), pick=st.integers(0, 10**6))
def test_adding_a_row_never_raises_a_members_risk(df: pd.DataFrame, pick: int) -> None:
    qi = SCHEMA.qi_names
    cls, sizes = class_index(df, qi)
    before = 1.0 / sizes[cls]
    grown = pd.concat([df, df.iloc[[pick % len(df)]]], ignore_index=True)
    cls2, sizes2 = class_index(grown, qi)
    after = (1.0 / sizes2[cls2])[: len(df)]
    assert (after <= before + 1e-12).all()


@st.composite
def class_sizes(draw: st.DrawFn) -> np.ndarray:
    return np.asarray(draw(st.lists(st.integers(1, 40), min_size=1, max_size=200)), dtype=np.int64)


@settings(max_examples=60, deadline=None)
@given(sizes=class_sizes(), pi=st.floats(0.001, 1.0))
def test_estimators_in_unit_interval(sizes: np.ndarray, pi: float) -> None:
    n = int(sizes.sum())
    est = uniqueness(sizes, max(round(n / pi), n))
    for model in ("pitman", "zayatz", "snb", "dankar"):
        value = est[model]
        assert value is None or (not isinstance(value, str) and 0.0 <= value <= 1.0)


@settings(max_examples=60, deadline=None)
@given(sizes=class_sizes())
def test_estimators_equal_sample_uniques_at_fraction_one(sizes: np.ndarray) -> None:
    n = int(sizes.sum())
    est = uniqueness(sizes, n)
    share = (sizes == 1).sum() / n
    for model in ("pitman", "zayatz", "snb", "dankar"):
        assert est[model] == share
    values, counts = np.unique(sizes, return_counts=True)
    assert abs(zayatz(values, counts, n, n) / n - share) < 1e-9  # the formula itself, not a special case
