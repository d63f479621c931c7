"""max_risk / avg_risk as requirements: the verifier checks them, engines enforce or refuse them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.encoding import encode
from core.engines.base import Release
from core.engines.registry import engine_names, get_engine, make_params
from core.errors import InfeasibleError, ParamsError
from core.privacy import PrivacyRequirement
from core.verify import verify_release
from tests.core.engines.test_property import _params, release_exists
from tests.strategies import make_table, small_schema, small_tables

SCHEMA = small_schema()


def test_k_min_maps_max_risk_to_a_class_size() -> None:
    assert PrivacyRequirement(k=5).k_min == 5
    assert PrivacyRequirement(k=5, max_risk=0.1).k_min == 10
    assert PrivacyRequirement(k=5, max_risk=0.3).k_min == 5  # ceil(1/0.3) = 4 < k
    assert PrivacyRequirement(k=2, max_risk=0.3).k_min == 4
    assert PrivacyRequirement(avg_risk=0.1).avg_risk_ok(classes=10, released=100)
    assert not PrivacyRequirement(avg_risk=0.1).avg_risk_ok(classes=11, released=100)


def test_verifier_refuses_a_k5_release_at_max_risk_0_1() -> None:
    df = make_table(7, 200)
    eng = get_engine("optimal")
    rel = eng.anonymize(encode(df, SCHEMA), make_params(eng, {"k": 5, "max_suppression": 0.05}),
                        np.random.default_rng(0))
    ok = verify_release(df, rel, SCHEMA)
    assert ok.ok and 5 <= ok.k < 10 and ok.max_risk == pytest.approx(1 / ok.k)
    strict = rel.requirement.model_copy(update={"max_risk": 0.1})
    report = verify_release(df, rel, SCHEMA, strict)
    assert not report.ok
    assert any("highest prosecutor risk" in f and "max_risk=0.1" in f for f in report.failures)
    assert ok.avg_risk is not None
    tight_avg = rel.requirement.model_copy(update={"avg_risk": ok.avg_risk / 2})
    assert any("average prosecutor risk" in f for f in verify_release(df, rel, SCHEMA, tight_avg).failures)


@pytest.mark.parametrize("name", engine_names())
def test_every_engine_enforces_or_refuses(name: str) -> None:
    """An engine either refuses a risk model up front (ParamsError) or enforces it: on a table that can
    meet it (120 rows: one class of all of them has risk 1/120, within both bounds) it must release."""
    eng = get_engine(name)
    df = make_table(11, 120)
    for field, value in (("max_risk", 0.2), ("avg_risk", 0.1)):
        values = _params(name, {"k": 3, "max_suppression": 0.1, field: value})
        if field not in eng.models:
            with pytest.raises(ParamsError, match=f"cannot guarantee {field}"):
                make_params(eng, values)
            continue
        params = make_params(eng, values)
        assert release_exists(name, params, df)
        rel = eng.anonymize(encode(df, SCHEMA), params, np.random.default_rng(1))
        report = verify_release(df, rel, SCHEMA)
        assert report.ok, report.failures
        if field == "max_risk":
            assert report.max_risk is not None and report.max_risk <= value
        else:
            assert report.avg_risk is not None and report.avg_risk <= value + 1e-9


def test_full_domain_engines_enforce_both() -> None:
    for name in ("optimal", "exhaustive", "datafly", "random", "kgen"):
        assert {"max_risk", "avg_risk"} <= set(get_engine(name).models)
    with pytest.raises(ParamsError, match="select"):
        make_params("pbg-ea", {"max_risk": 0.1, "select": "min GLM where k >= 10"})


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=small_tables(min_rows=20), avg=st.sampled_from([0.05, 0.1, 0.2]), supp=st.sampled_from([0.0, 0.1, 0.3]))
def test_optimal_matches_exhaustive_under_avg_risk(df: pd.DataFrame, avg: float, supp: float) -> None:
    """avg_risk is not monotone with suppression: the branch and bound must still find the optimum."""
    batch = encode(df, SCHEMA)
    values = {"k": 2, "max_suppression": supp, "avg_risk": avg}
    results: list[Release | None] = []
    for name in ("optimal", "exhaustive"):
        eng = get_engine(name)
        try:
            results.append(eng.anonymize(batch, make_params(eng, values), np.random.default_rng(0)))
        except InfeasibleError:
            results.append(None)
    opt, exh = results
    assert (opt is None) == (exh is None)
    assert (opt is not None) == release_exists("optimal", make_params("optimal", values), df)
    if opt is not None:
        assert exh is not None
        assert opt.diagnostics["objective_value"] == pytest.approx(exh.diagnostics["objective_value"])
        assert verify_release(df, opt, SCHEMA).ok
