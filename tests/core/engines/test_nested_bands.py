"""Nested bands (the default of every local-recoding engine): released labels per QI are nodes of the
spec's hierarchy, so any two are disjoint or one contains the other, and the release still verifies."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.encoding import Schema, encode
from core.engines.registry import get_engine, make_params
from core.errors import InfeasibleError
from core.hierarchies.intervals import parse_interval
from core.hierarchies.nodes import is_laminar
from core.schema import parse_spec
from core.verify import verify_release
from tests.strategies import COLORS, OFFENCES

LOCAL_RECODING = ["cg-kanon", "cg-diverse", "mondrian", "kmember", "lgreedy", "ils", "local-recode"]
FAST = {"ils": {"max_iterations": 100, "time_limit": 0}, "cg-kanon": {"time_limit": 0},
        "cg-diverse": {"time_limit": 0}, "local-recode": {"iterations": 10}}
SCHEMA = Schema.from_spec(parse_spec({
    "name": "nested",
    "qi": [
        {"name": "age", "type": "numeric", "hierarchy": {"widths": [5, 10, 20], "domain": [0, 100], "integer": True}},
        {"name": "income", "type": "numeric", "hierarchy": {"widths": [2.5, 5, 10]}},
        {"name": "day", "type": "date", "hierarchy": {"levels": ["day", "month", "year"]}},
        {"name": "color", "type": "categorical", "hierarchy": {"tree": COLORS}},
    ],
    "sensitive": {"name": "offence", "severity": {o: i + 1 for i, o in enumerate(OFFENCES)}},
}))
COLOR_NODES = {"*", *COLORS, *(c for group in COLORS.values() for c in group)}


@st.composite
def tables(draw: st.DrawFn) -> pd.DataFrame:
    seed, n = draw(st.integers(0, 2**32 - 1)), draw(st.integers(12, 50))
    return make(np.random.default_rng(seed), n)


def make(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """``n`` random rows of :data:`SCHEMA` (days over four months around a new year)."""
    days = pd.Timestamp("2023-11-01") + pd.to_timedelta(rng.integers(0, 120, n), unit="D")
    return pd.DataFrame({
        "age": rng.integers(15, 80, n), "income": rng.integers(0, 80, n) / 2,
        "day": days.strftime("%Y-%m-%d"), "color": rng.choice(sorted(COLOR_NODES - {"*", *COLORS}), n),
        "offence": rng.choice(OFFENCES, n),
    })


def closed_range(label: str) -> tuple[float, float]:
    """Inclusive bounds of a numeric label (``*`` is everything)."""
    if label == "*":
        return -np.inf, np.inf
    parsed = parse_interval(label)
    assert parsed is not None, label
    lo, hi, closed = parsed
    return lo, hi if closed else float(np.nextafter(hi, -np.inf))


def date_range(label: str) -> tuple[float, float]:
    """Inclusive day bounds of a date node: ``*``, ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``."""
    if label == "*":
        return -np.inf, np.inf
    assert len(label) in (4, 7, 10), label  # a year, a month or a day: never a free range of days
    start = pd.Timestamp(label + {4: "-01-01", 7: "-01", 10: ""}[len(label)])
    step = {4: pd.DateOffset(years=1), 7: pd.DateOffset(months=1), 10: pd.DateOffset(days=1)}[len(label)]
    return float(start.value // 86400e9), float((start + step).value // 86400e9 - 1)


def assert_nested(rows: pd.DataFrame, df: pd.DataFrame) -> None:
    """Every released label is a hierarchy node and the labels of each column are laminar."""
    for name, widths in (("age", (1, 5, 10, 20)), ("income", (0, 2.5, 5, 10))):
        ranges = [closed_range(lab) for lab in rows[name].astype(str).unique()]
        assert is_laminar(ranges), (name, sorted(ranges))
        for lo, hi in ranges:  # a leaf value or a band of the grid (origin a multiple of the top width)
            if np.isinf(lo) or lo == hi:
                continue
            width = hi - lo + (1 if name == "age" else 0)
            assert any(w and np.isclose(width, w, atol=1e-6) and np.isclose(lo % w, 0) for w in widths), \
                (name, lo, hi)
    ranges = [date_range(lab) for lab in rows["day"].astype(str).unique()]
    assert is_laminar(ranges), sorted(ranges)
    assert set(rows["color"].astype(str)) <= COLOR_NODES
    assert len(df) >= len(rows)


@pytest.mark.parametrize("name", LOCAL_RECODING)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=tables(), k=st.integers(2, 4))
def test_local_recoding_releases_nested_labels(name: str, df: pd.DataFrame, k: int) -> None:
    eng = get_engine(name)
    values = {"k": k, "max_suppression": 0.1, **FAST.get(name, {})}
    if name == "cg-diverse":
        values["l"] = 2
    if "nesting_fallback" in eng.Params.model_fields:
        values["nesting_fallback"] = False  # every QI nested (the per-QI fallback: test_nesting_fallback.py)
    params = make_params(eng, values)
    assert getattr(params, "bands", "nested") == "nested"  # the default
    try:
        rel = eng.anonymize(encode(df, SCHEMA), params, np.random.default_rng(3))
    except InfeasibleError:
        return  # which tables are releasable is test_property's business
    report = verify_release(df, rel, SCHEMA)
    assert report.ok, report.failures
    assert report.k >= k
    assert_nested(rel.rows, df)


@pytest.mark.parametrize("name", [n for n in LOCAL_RECODING if n != "local-recode"])
def test_free_ranges_stay_available(name: str) -> None:
    """``bands = "free"`` gives each class its own hull: some labels overlap, and it still verifies."""
    df = make(np.random.default_rng(5), 60)
    eng = get_engine(name)
    values = {"k": 3, "bands": "free", **FAST.get(name, {})}
    if name == "cg-diverse":
        values["l"] = 2
    rel = eng.anonymize(encode(df, SCHEMA), make_params(eng, values), np.random.default_rng(3))
    assert verify_release(df, rel, SCHEMA).ok
    ages = rel.rows["age"].astype(str).unique()
    assert any((iv := parse_interval(a)) is not None and iv[0] % 5 != 0 for a in ages if a != "*")


def test_local_recode_has_no_free_option() -> None:
    """local-recode releases full-domain nodes round by round: always nested, so no ``bands`` parameter."""
    assert "bands" not in get_engine("local-recode").Params.model_fields


def test_typed_columns_read_nested_labels() -> None:
    """age_lo / age_hi and the date bounds parse every nested label; each label sits on a hierarchy level."""
    from core.columns import typed_columns
    from core.columns.typed import interpreters

    df = make(np.random.default_rng(8), 80)
    eng = get_engine("mondrian")
    rel = eng.anonymize(encode(df, SCHEMA), make_params(eng, {"k": 4, "nesting_fallback": False}),
                        np.random.default_rng(0))
    typed = typed_columns(rel.rows, SCHEMA)
    real = rel.rows["age"] != "*"
    assert typed.loc[real, "age_lo"].notna().all() and (typed.loc[real, "age_lo"] <= typed.loc[real, "age_hi"]).all()
    assert typed.loc[rel.rows["day"] != "*", "day_start"].notna().all()
    assert typed["color_level"].notna().all()  # a node, never a set
    for interp in interpreters(SCHEMA):  # the codebook's level shares: every label on a level, none a range
        assert all(isinstance(interp.level(lab), int) for lab in rel.rows[interp.name].astype(str).unique())


def test_values_with_commas_need_no_set_labels_when_nested() -> None:
    """Free set labels cannot hold 'Smith, J'; nested labels are nodes, so the value is released as is."""
    from core.errors import InputDataError

    schema = Schema.from_spec(parse_spec({"name": "c", "qi": [
        {"name": "who", "type": "categorical", "hierarchy": {"tree": {"A": ["Smith, J", "Jones, K"], "B": ["Lee"]}}}]}))
    df = pd.DataFrame({"who": ["Smith, J", "Jones, K", "Lee"] * 4})
    eng = get_engine("kmember")
    rel = eng.anonymize(encode(df, schema), make_params(eng, {"k": 4}), np.random.default_rng(0))
    assert verify_release(df, rel, schema).ok
    with pytest.raises(InputDataError, match="set label"):
        eng.anonymize(encode(df, schema), make_params(eng, {"k": 4, "bands": "free"}), np.random.default_rng(0))
