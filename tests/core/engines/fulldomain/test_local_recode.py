"""local-recode: ARX-style iterative local recoding on top of the optimal full-domain node."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.encoding import Schema, encode
from core.engines.base import Release
from core.engines.fulldomain.local_recode import LocalRecodeEngine, LocalRecodeParams
from core.engines.registry import get_engine, make_params
from core.errors import InfeasibleError, ParamsError
from core.verify import verify_release
from tests.strategies import small_schema, small_tables


@pytest.fixture(scope="module")
def adult_part(adult_df: pd.DataFrame) -> pd.DataFrame:
    return adult_df.sample(2000, random_state=2).reset_index(drop=True)


def anonymize(name: str, df: pd.DataFrame, schema: Schema, **values: Any) -> Release:
    if name == "local-recode":
        values = {"iterations": 10, **values}  # 10 rounds at most: small tables need many nodes per round
    eng = get_engine(name)
    return eng.anonymize(encode(df, schema), make_params(eng, values), np.random.default_rng(0))


@pytest.mark.slow
def test_verified_and_far_below_the_full_domain_optimum(adult_part: pd.DataFrame, adult_schema: Schema) -> None:
    rel = anonymize("local-recode", adult_part, adult_schema, k=5)
    report = verify_release(adult_part, rel, adult_schema)
    assert report.ok, report.failures
    assert report.k >= 5 and len(rel.suppressed) <= 0.01 * len(adult_part)
    for supp in (0.0, 0.04):
        full = anonymize("optimal", adult_part, adult_schema, k=5, max_suppression=supp)
        assert rel.metrics["loss_metric"] < full.metrics["loss_metric"]
    assert rel.diagnostics["rounds"] >= 2 and rel.diagnostics["nodes_used"] >= 2


def test_classes_are_the_released_tuples(adult_part: pd.DataFrame, adult_schema: Schema) -> None:
    rel = anonymize("local-recode", adult_part, adult_schema, k=3)
    qi = adult_schema.qi_names
    per_tuple = rel.rows[qi].astype(str).assign(cls=rel.class_ids).groupby(qi)["cls"].nunique()
    assert (per_tuple == 1).all()  # identical released tuples share one class
    assert np.bincount(rel.class_ids).min() >= 3


def test_round_one_alone_is_the_optimum_and_more_rounds_never_hurt(adult_part: pd.DataFrame,
                                                                   adult_schema: Schema) -> None:
    one = anonymize("local-recode", adult_part, adult_schema, k=5, iterations=1, left_over_weight=1.0,
                    max_suppression=0.0)
    opt = anonymize("optimal", adult_part, adult_schema, k=5)
    assert one.metrics["loss_metric"] == pytest.approx(opt.metrics["loss_metric"])
    many = anonymize("local-recode", adult_part, adult_schema, k=5, iterations=10)
    assert many.metrics["loss_metric"] <= one.metrics["loss_metric"]


def test_deterministic_and_refuses_models_it_cannot_keep(adult_part: pd.DataFrame, adult_schema: Schema) -> None:
    a = anonymize("local-recode", adult_part.head(800), adult_schema, k=4)
    b = anonymize("local-recode", adult_part.head(800), adult_schema, k=4)
    assert a.digest() == b.digest() and a.diagnostics["budget_cap_hit"] is False
    with pytest.raises(ParamsError, match="distinct l only"):
        make_params("local-recode", {"l": 2, "l_kind": "entropy"})
    with pytest.raises(ParamsError, match="distinct l only"):
        make_params("local-recode", {"t": 0.2})


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=small_tables(min_rows=20, max_rows=80), k=st.integers(2, 4), use_l=st.booleans(),
       iterations=st.sampled_from([3, 10, 100]), weight=st.sampled_from([0.001, 1.0]),
       supp=st.sampled_from([0.0, 0.1]))
def test_the_fast_search_releases_what_the_plain_search_releases(df: pd.DataFrame, k: int, use_l: bool, iterations: int,
                                                                 weight: float, supp: float) -> None:
    schema = small_schema()  # max_suppression 0 often merges the left-over rows into the last round
    values = {"k": k, "l": 2 if use_l else None, "iterations": iterations, "left_over_weight": weight,
              "max_suppression": supp}
    out: list[Release | str] = []
    for reference in (False, True):
        eng = get_engine("local-recode")
        assert isinstance(eng, LocalRecodeEngine)
        eng.reference = reference  # True: class tables, projection seeding, no carried infeasible set
        try:
            params = make_params(eng, values)
            assert isinstance(params, LocalRecodeParams)
            out.append(eng.anonymize(encode(df, schema), params, np.random.default_rng(0)))
        except InfeasibleError as exc:
            out.append(str(exc))
    fast, plain = out
    if isinstance(fast, str) or isinstance(plain, str):
        assert fast == plain
        return
    assert fast.rows.equals(plain.rows) and np.array_equal(fast.class_ids, plain.class_ids)
    assert np.array_equal(fast.suppressed, plain.suppressed) and fast.metrics == plain.metrics
    assert fast.diagnostics["round_detail"] == plain.diagnostics["round_detail"]
