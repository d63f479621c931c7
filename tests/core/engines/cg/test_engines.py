"""CG-Kanon and CG-Diverse: guarantees checked by the independent verifier, severity placement,
determinism, the anytime curve and clear errors for bad input."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.encoding import Schema, encode
from core.engines.base import Release
from core.engines.cg.params import CGParams
from core.engines.registry import get_engine, make_params
from core.errors import InfeasibleError, ParamsError, SpecError
from core.generators import SEVERITY, generate_crime_reports
from core.metrics import severity_penalty
from core.schema import parse_spec
from core.verify import verify_release
from stream.io.specs import load_schema
from tests.strategies import small_schema, small_tables

SMALL = small_schema()
FAST = {"time_limit": 0, "max_iterations": 8}  # deterministic: no wall-clock stop


@pytest.fixture(scope="module")
def crime() -> tuple[pd.DataFrame, Schema]:
    df = generate_crime_reports(np.random.default_rng(11), per_day=2500)
    return df, load_schema("crime").restrict(["age", "suburb", "reporter"])


def run(name: str, df: pd.DataFrame, schema: Schema, seed: int = 0, **values: Any) -> Release:
    eng = get_engine(name)
    return eng.anonymize(encode(df, schema), make_params(eng, {**FAST, **values}), np.random.default_rng(seed))


@pytest.mark.parametrize("name", ["cg-kanon", "cg-diverse"])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=small_tables(min_rows=6, max_rows=80), k=st.integers(1, 6), cap=st.sampled_from([1.0, 2.0, 4.0]))
def test_every_release_meets_k_min_and_l_by_the_verifier(name: str, df: pd.DataFrame, k: int, cap: float) -> None:
    values: dict[str, Any] = {"k": k, "cap_factor": cap, "max_suppression": 0.5}
    if name == "cg-diverse":
        values["l"] = 2
    try:
        rel = run(name, df, SMALL, **values)
    except InfeasibleError:
        sev = df["offence"].map({o: i + 1 for i, o in enumerate(["Theft", "Robbery", "Fraud", "Assault",
                                                                  "Vandalism"])})
        k_min = max(k, int(sev.min()))
        assert len(df) < k_min or (name == "cg-diverse" and df["offence"].nunique() < 2) or cap < 2
        return
    report = verify_release(df, rel, SMALL)
    assert report.ok, report.failures
    assert rel.requirement.k == rel.diagnostics["k_min"] >= k
    assert report.k >= rel.diagnostics["k_min"]
    assert len(rel.suppressed) == rel.diagnostics["suppressed"]
    if name == "cg-diverse":
        assert report.l_distinct is not None and report.l_distinct >= 2 and len(rel.suppressed) == 0


@pytest.mark.parametrize("name", ["cg-kanon", "cg-diverse"])
def test_generated_reports_verify_with_all_five_qis(name: str) -> None:
    df = generate_crime_reports(np.random.default_rng(5), stations=2, per_day=1000).head(1500)
    schema = load_schema("crime")
    rel = run(name, df, schema, k=5)
    report = verify_release(df, rel, schema)
    assert report.ok, report.failures
    assert report.k >= 5 and len(rel.suppressed) == 0
    if name == "cg-diverse":
        assert report.l_distinct is not None and report.l_distinct >= 3
    assert set(rel.rows.columns) == {"age", "sex", "suburb", "postcode", "reporter", "offence"}


def test_severe_offences_sit_in_larger_classes(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, schema = crime
    rel = run("cg-kanon", df, schema, k=5)
    assert verify_release(df, rel, schema).ok
    sizes = pd.Series(np.bincount(rel.class_ids)[rel.class_ids], index=rel.rows.index)
    sev = rel.rows["offence"].map(SEVERITY)
    severe, petty = sizes[sev >= 10].mean(), sizes[sev <= 3].mean()
    assert severe >= petty
    assert rel.metrics["severity_class_size_corr"] > 0


def test_k_min_follows_the_smallest_severity_in_the_batch(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, schema = crime
    serious = df[df["offence"].map(SEVERITY) >= 7].head(400)
    rel = run("cg-kanon", serious, schema, k=5)
    assert rel.diagnostics["k_min"] == 7 and rel.diagnostics["min_severity"] == 7
    assert verify_release(serious, rel, schema).k >= 7
    assert rel.diagnostics["cap"] == 28


def test_cg_diverse_is_l_diverse_and_more_diverse_than_cg_kanon(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, schema = crime
    kanon = run("cg-kanon", df, schema)
    diverse = run("cg-diverse", df, schema, l=3)
    rep = verify_release(df, diverse, schema)
    assert rep.ok and rep.l_distinct is not None and rep.l_distinct >= 3 and rep.k >= 5
    assert diverse.requirement.l == 3
    assert diverse.diagnostics["l_target"] == pytest.approx(df["offence"].map(SEVERITY).mean())
    assert diverse.metrics["sensitive_frequency_mean_max"] <= kanon.metrics["sensitive_frequency_mean_max"]


def test_same_seed_same_release(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, schema = crime
    for name in ("cg-kanon", "cg-diverse"):
        a, b = run(name, df, schema, seed=3), run(name, df, schema, seed=3)
        assert a.diagnostics["budget_cap_hit"] is False and b.diagnostics["budget_cap_hit"] is False
        pd.testing.assert_frame_equal(a.rows, b.rows)
        assert np.array_equal(a.class_ids, b.class_ids)
        assert a.metrics["loss_metric"] == b.metrics["loss_metric"]


def test_anytime_curve_is_monotone_and_valid_at_every_stage(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, schema = crime
    start = run("cg-kanon", df, schema, max_iterations=0)
    full = run("cg-kanon", df, schema, max_iterations=30)
    for rel in (start, full):
        assert verify_release(df, rel, schema).ok
        curve = rel.diagnostics["loss_curve"]
        assert all(len(pt) == 2 for pt in curve)
        seconds, losses = zip(*curve, strict=True)
        assert list(seconds) == sorted(seconds)
        assert all(b <= a + 1e-12 for a, b in itertools.pairwise(losses))
    assert full.diagnostics["final_objective"] <= start.diagnostics["final_objective"]
    assert full.diagnostics["final_objective"] < full.diagnostics["start_objective"]
    assert start.diagnostics["sweeps"] == 0


def test_a_binding_time_cap_stops_the_search_with_a_valid_flagged_release(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, schema = crime
    rel = run("cg-kanon", df, schema, time_limit=1e-6, max_iterations=1000)
    assert verify_release(df, rel, schema).ok
    assert rel.diagnostics["stop"] == "time cap" and rel.diagnostics["budget_cap_hit"] is True
    assert rel.diagnostics["sweeps"] <= 1


def test_metrics_and_fitness(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, schema = crime
    rel = run("cg-kanon", df, schema)
    m = rel.metrics
    for key in ("loss_metric", "gcp", "discernibility", "average_class_size", "suppression_rate", "classes",
                "per_attribute_loss", "severity_penalty", "sensitive_frequency", "fitness", "objective"):
        assert key in m
    sev = rel.rows["offence"].map(SEVERITY).to_numpy()
    assert m["severity_penalty"] == pytest.approx(severity_penalty(rel.class_ids, sev))
    assert 0 <= m["loss_metric"] <= 1 and 0 <= m["privacy_term"] <= 1
    assert m["fitness"] == pytest.approx(1 / m["objective"])
    assert m["objective"] >= max(m["loss_metric"], m["privacy_term"]) - 1e-9
    freq = m["sensitive_frequency"]["Theft"]
    assert 0 < freq["min"] <= freq["mean"] <= freq["max"] <= 1


def test_weights_keep_detail_where_the_owner_asks(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, schema = crime
    age_first = run("cg-kanon", df, schema, weights={"age": 10, "suburb": 5, "reporter": 1})
    reporter_first = run("cg-kanon", df, schema, weights={"age": 1, "suburb": 5, "reporter": 10})
    a, r = age_first.metrics["per_attribute_loss"], reporter_first.metrics["per_attribute_loss"]
    assert a["age"] < r["age"] and r["reporter"] < a["reporter"]
    with pytest.raises(ParamsError, match="unknown QI"):
        run("cg-kanon", df, schema, weights={"height": 2})


def test_tiny_cap_suppresses_and_counts_or_refuses(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, schema = crime
    part = df.head(103)
    rel = run("cg-kanon", part, schema, cap_factor=1.0, max_suppression=0.1)
    assert len(rel.suppressed) == 103 % 5 == rel.diagnostics["suppressed"]
    assert verify_release(part, rel, schema).ok
    with pytest.raises(InfeasibleError, match="suppressed"):
        run("cg-kanon", part, schema, cap_factor=1.0)


def test_cg_diverse_merges_undiverse_rows_into_the_top_class(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, schema = crime
    theft = df[df["offence"] == "Theft"].head(60)
    rest = df[df["offence"].isin(["Murder", "Fraud"])].head(6)
    part = pd.concat([theft, rest])
    rel = run("cg-diverse", part, schema, l=3, degrade=False)  # chase the target, as the paper
    rep = verify_release(part, rel, schema)
    assert rep.ok and rep.l_distinct is not None and rep.l_distinct >= 3 and len(rel.suppressed) == 0
    assert rel.diagnostics["top_class_size"] > 0
    assert (rel.rows[["age", "suburb", "reporter"]] == "*").all(axis=1).sum() >= rel.diagnostics["top_class_size"]
    # the default degrades gracefully here (3 offences cannot reach the target): neighbouring classes
    # merge instead, with fewer all-'*' rows and about the same loss (measured: 0.730 against 0.712; the
    # search is a heuristic on 66 rows)
    graceful = run("cg-diverse", part, schema, l=3)
    assert verify_release(part, graceful, schema).ok and graceful.diagnostics["degraded"]
    assert graceful.diagnostics["top_class_size"] <= rel.diagnostics["top_class_size"]
    assert graceful.metrics["loss_metric"] <= 1.05 * rel.metrics["loss_metric"]


def test_batch_smaller_than_k_min_says_how_many_rows_are_missing(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, schema = crime
    robberies = df[df["offence"] == "Robbery"].head(5)  # severity 7 -> k_min = 7
    with pytest.raises(InfeasibleError, match="needs 2 more rows"):
        run("cg-kanon", robberies, schema, k=5)
    with pytest.raises(InfeasibleError, match="needs 1 more rows"):
        run("cg-diverse", df.head(4), schema, k=5)


def test_severity_table_missing_an_offence_is_an_error(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, _ = crime
    spec = load_schema("crime").spec.model_dump()
    spec["sensitive"]["severity"] = {k: v for k, v in SEVERITY.items() if k != "Theft"}
    schema = Schema.from_spec(parse_spec(spec))
    with pytest.raises(SpecError, match=r"lacks offence.*Theft"):
        run("cg-kanon", df.head(200), schema)


def test_non_positive_severity_is_an_error(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, schema = crime
    spec = load_schema("crime").spec.model_dump()
    spec["sensitive"]["severity"] = {**SEVERITY, "Theft": 0}
    with pytest.raises(SpecError, match="positive"):
        parse_spec(spec)
    batch = encode(df.head(200), schema)
    assert batch.severity is not None
    bad = dataclasses.replace(batch, severity=np.where(batch.sensitive_labels == "Theft", -1.0, batch.severity))
    eng = get_engine("cg-kanon")
    with pytest.raises(SpecError, match=r"positive.*Theft"):
        eng.anonymize(bad, make_params(eng, FAST), np.random.default_rng(0))


def test_missing_severity_table_and_unsupported_models_are_errors(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, _ = crime
    spec = load_schema("crime").spec.model_dump()
    spec["sensitive"]["severity"] = None
    with pytest.raises(SpecError, match="severity table"):
        run("cg-kanon", df.head(100), Schema.from_spec(parse_spec(spec)))
    with pytest.raises(ParamsError, match="cg-kanon"):
        run("cg-kanon", df.head(100), load_schema("crime"), l=3)
    with pytest.raises(ParamsError, match="distinct"):
        make_params("cg-diverse", {"l": 3, "l_kind": "entropy"})
    with pytest.raises(InfeasibleError, match="distinct offence"):
        run("cg-diverse", df[df["offence"].isin(["Theft", "Fraud"])].head(50), load_schema("crime"), l=3)


def test_registry_defaults_suit_the_stream() -> None:
    for name in ("cg-kanon", "cg-diverse"):
        p = make_params(name, {"k": 5})
        assert isinstance(p, CGParams)
        assert p.k == 5 and p.max_iterations == 100 and p.time_limit == 60.0 and p.cap_factor == 4.0
    assert make_params("cg-diverse", {}).l == 3


def test_ase_rule_keeps_the_guarantee(crime: tuple[pd.DataFrame, Schema]) -> None:
    df, schema = crime
    rel = run("cg-diverse", df.head(1200), schema, l=3, ase_rule=True)
    rep = verify_release(df.head(1200), rel, schema)
    assert rep.ok and rep.l_distinct is not None and rep.l_distinct >= 3
    counts = rel.rows.assign(c=rel.class_ids).groupby("c")["offence"]
    ase = counts.apply(lambda s: s.map(SEVERITY).mean())
    need = np.minimum(np.ceil(ase - 1e-9), np.floor(rel.diagnostics["l_target"]))
    top = (rel.rows[["age", "suburb", "reporter"]] == "*").all(axis=1).groupby(rel.class_ids).all()
    assert ((counts.nunique() >= need) | top).all()


def test_warm_up_loads_the_kernels() -> None:
    from core.engines.warmup import warm_up_all

    times = warm_up_all(["cg-kanon", "cg-diverse"])
    assert set(times) == {"cg-kanon", "cg-diverse"} and all(t >= 0.0 for t in times.values())
