"""The utility report's figures against an independent pandas computation on a small table."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.encoding import Schema
from core.errors import SpecError
from core.metrics.utility import pair_counts, publishable_utility, tvd, utility_paragraph, utility_report
from core.schema import parse_spec

SPEC: dict[str, Any] = {"name": "small", "qi": [
    {"name": "age", "type": "numeric", "hierarchy": {"widths": [10, 20], "domain": [0, 100], "integer": True}},
    {"name": "colour", "type": "categorical", "hierarchy": {"tree": {"Warm": ["red", "orange"], "Cool": ["blue"]}}},
], "sensitive": {"name": "offence"}, "utility": {"crosstab": ["colour:1", "offence"]}}

AGES = [21, 24, 27, 33, 35, 38, 41, 45, 52, 58, 61, 77]
COLOURS = ["red", "orange", "blue", "red", "blue", "orange", "red", "blue", "blue", "red", "orange", "red"]
OFFENCES = ["Theft", "Fraud", "Theft", "Assault", "Theft", "Fraud", "Theft", "Theft", "Fraud", "Assault", "Theft",
            "Fraud"]
# what an engine might release (row 11 suppressed): values, nested bands, a free range, a wider band, '*'
AGE_LABELS = ["21", "[20, 29]", "[20, 29]", "[30, 39]", "[30, 39]", "[33, 38]", "[40, 59]", "[40, 59]",
              "[40, 59]", "[52, 61]", "*"]
COLOUR_LABELS = ["red", "Warm", "blue", "Warm", "Cool", "*", "red", "blue", "{blue,red}", "Warm", "Warm"]


@pytest.fixture
def tables() -> tuple[Schema, pd.DataFrame, pd.DataFrame]:
    schema = Schema.from_spec(parse_spec(SPEC))
    original = pd.DataFrame({"age": AGES, "colour": COLOURS, "offence": OFFENCES})
    released = pd.DataFrame({"age": AGE_LABELS, "colour": COLOUR_LABELS, "offence": OFFENCES[:11]},
                            index=original.index[:11])
    return schema, original, released


def _decade(label: str) -> str | None:
    """A released age label's decade by regular expression: independent of the code under test."""
    nums = [int(x) for x in re.findall(r"\d+", label)]
    if not nums or nums[0] // 10 != nums[-1] // 10:
        return None
    return f"[{nums[0] // 10 * 10}, {nums[0] // 10 * 10 + 9}]"


def _tvd(p: pd.Series, q: pd.Series) -> float:
    p, q = p / p.sum(), q / q.sum()
    return float(0.5 * p.sub(q, fill_value=0).abs().sum())


def test_age_at_decades_matches_pandas(tables: tuple[Schema, pd.DataFrame, pd.DataFrame]) -> None:
    schema, original, released = tables
    rep = utility_report(schema, original, released)
    level = rep["qis"]["age"]["levels"][1]
    assert level["name"] == "band of width 10"
    orig = (original["age"] // 10 * 10).map(lambda lo: f"[{lo}, {lo + 9}]").value_counts()
    rel = released["age"].map(_decade).dropna().value_counts()
    assert level["original"] == orig.to_dict()
    assert level["released"] == rel.to_dict()
    assert level["coarser"] == released["age"].map(_decade).isna().sum() == 5  # 40-59 x3, the free range, *
    assert level["suppressed"] == rep["suppressed"] == 1
    assert level["resolved"] == pytest.approx(rel.sum() / len(original))
    assert level["tvd"] == pytest.approx(_tvd(orig, rel))
    # the original values level: only the exact value resolves; the top level is not reported
    values = rep["qis"]["age"]["levels"][0]
    assert values["released"] == {"21": 1} and values["coarser"] == 10
    assert [lv["name"] for lv in rep["qis"]["age"]["levels"]] == ["value", "band of width 10", "band of width 20"]
    # width 20: [40, 59] now resolves, the free range [52, 61] still straddles two bands
    assert rep["qis"]["age"]["levels"][2]["coarser"] == 2


def test_tree_level_sensitive_and_crosstab_match_pandas(tables: tuple[Schema, pd.DataFrame, pd.DataFrame]) -> None:
    schema, original, released = tables
    rep = utility_report(schema, original, released)
    parent = {"red": "Warm", "orange": "Warm", "blue": "Cool", "Warm": "Warm", "Cool": "Cool"}
    group = released["colour"].map(parent)  # the set {blue,red} and * fit no group
    level = rep["qis"]["colour"]["levels"][1]
    assert level["original"] == original["colour"].map(parent).value_counts().to_dict()
    assert level["released"] == group.value_counts().to_dict() and level["coarser"] == 2
    sens = rep["sensitive"]
    assert sens["original"] == original["offence"].value_counts().to_dict()
    assert sens["released"] == released["offence"].value_counts().to_dict()
    assert sens["tvd"] == pytest.approx(_tvd(original["offence"].value_counts(), released["offence"].value_counts()))
    o = pd.crosstab(original["colour"].map(parent), original["offence"]).stack()
    r = pd.crosstab(group, released["offence"]).stack().reindex(o.index, fill_value=0)
    err = (o - r).abs()
    ct = rep["crosstab"]
    assert ct["columns"] == ["colour:1", "offence"] and ct["cells"] == (o > 0).sum()
    assert ct["max_error"]["error"] == err.max()
    cell = tuple(ct["max_error"]["cell"])
    assert err[cell] == err.max() and ct["max_error"]["original"] == o[cell]
    assert ct["unresolved"] == len(original) - int(r.sum())


def test_public_report_publishes_nothing_about_suppressed_rows_or_small_cells(
        tables: tuple[Schema, pd.DataFrame, pd.DataFrame]) -> None:
    schema, original, released = tables
    pub = utility_report(schema, original, released, k=3, public=True)
    assert pub["public"] and pub["suppressed"] == 1 and pub["rows"] == 12
    decades = pub["qis"]["age"]["levels"][1]
    published = original.loc[released.index]
    orig = (published["age"] // 10 * 10).map(lambda lo: f"[{lo}, {lo + 9}]").value_counts()
    assert decades["original"] == orig[orig >= 3].to_dict()  # the suppressed 77 is not counted anywhere
    assert decades["withheld"] == orig[orig < 3].sum()
    assert "original" not in pub["sensitive"] and pub["sensitive"]["tvd_at_most"] == pytest.approx(1 / 12)
    worst = pub["crosstab"]["max_error"]
    assert worst["cell"] is None or worst["original"] >= 3


def test_tvd_and_paragraph() -> None:
    assert tvd({"a": 2, "b": 2}, {"a": 1}) == pytest.approx(0.5)
    assert tvd({"a": 1}, {}) is None
    report = {"qis": {"age": {"levels": [
        {"level": 0, "name": "value", "resolved": 0.1, "tvd": 0.4},
        {"level": 1, "name": "band of width 10", "resolved": 0.95, "tvd": 0.03}]},
        "sex": {"levels": [{"level": 0, "name": "value", "resolved": 0.0, "tvd": None}]}},
        "sensitive": {"name": "offence", "suppressed": 2, "tvd_at_most": 0.02},
        "crosstab": {"columns": ["suburb:region", "offence"], "unresolved": 7,
                     "max_error": {"cell": ["Cape Flats", "Theft"], "original": 267, "released": 255, "error": 12}}}
    text = utility_paragraph(report)
    assert "Preserves: age to band of width 10 (95% of rows, TVD 0.03)." in text
    assert "Distorts: age at value (only 10% of rows resolve); sex entirely (no row below *)." in text
    assert "offence is published unchanged for every published row (2 suppressed" in text
    assert "largest cell error 12 of 267 (cell Cape Flats × Theft); 7 row(s) in no cell." in text


def test_crosstab_names_are_checked() -> None:
    with pytest.raises(SpecError, match=r"utility\.crosstab: 'colour:1' is not a QI"):
        parse_spec({**SPEC, "qi": SPEC["qi"][:1], "utility": {"crosstab": ["colour:1", "offence"]}})
    with pytest.raises(SpecError, match="is not a QI"):
        parse_spec({**SPEC, "utility": {"crosstab": ["offence:1", "age"]}})
    schema = Schema.from_spec(parse_spec({**SPEC, "utility": {"crosstab": ["colour:nope", "offence"]}}))
    original = pd.DataFrame({"age": AGES, "colour": COLOURS, "offence": OFFENCES})
    ct = utility_report(schema, original, original)["crosstab"]  # a bad level is reported, never raised
    assert "no level 'nope'" in ct["error"] and ct["max_error"] is None


def test_a_report_that_cannot_be_computed_says_why(tables: tuple[Schema, pd.DataFrame, pd.DataFrame]) -> None:
    schema, original, released = tables
    report = publishable_utility(schema, original, released.drop(columns=["colour"]), 3)
    assert report == {"public": True, "error": "KeyError: 'colour'"}
    assert utility_paragraph(report) == "No utility report: KeyError: 'colour'"
    assert publishable_utility(schema, original, released, 3) == utility_report(schema, original, released, k=3,
                                                                                 public=True)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 4), st.integers(-1, 3)), max_size=60),
       st.lists(st.sampled_from(["x", "y", "z", None, "b"]), min_size=6, max_size=6),
       st.lists(st.sampled_from(["p", "q", None, "a"]), min_size=5, max_size=5))
def test_pair_counts_are_those_of_value_counts(rows: list[tuple[int, int]], a_values: list[str | None],
                                               b_values: list[str | None]) -> None:
    """The crosstab's counts on codes: the very Series (cells, counts and order) that pandas' value_counts
    gives for the two columns of values, missing ones dropped (ties and all)."""
    a_codes = np.asarray([r[0] for r in rows], dtype=np.int64)
    b_codes = np.asarray([r[1] for r in rows], dtype=np.int64)
    a, b = np.asarray(a_values, dtype=object), np.asarray(b_values[:5], dtype=object)
    want = pd.DataFrame({"a": a[a_codes], "b": b[b_codes]}, dtype=object).dropna().value_counts()
    got = pair_counts((a_codes, a), (b_codes, b))
    pd.testing.assert_series_equal(got, want, check_index_type=False)
    assert list(got.index) == list(want.index)
