"""Count tables: every public cell published, noise real (never the exact table), persons bounded."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.dp.derive import grouping_columns, person_keys
from core.dp.plan import bound_contributions, count_tables, exact_counts
from core.errors import SpecError
from core.generators.crime import generate_crime_reports
from stream.io.specs import load_spec_data


@pytest.fixture(scope="module")
def crime() -> pd.DataFrame:
    return generate_crime_reports(np.random.default_rng(3), stations=2, days=2, per_day=150)


def test_crime_tables_cover_the_public_domain_and_are_noisy(crime: pd.DataFrame) -> None:
    spec = load_spec_data("crime")
    assert spec.dp is not None
    groups, domains = grouping_columns(crime, spec, ["2024-01-01", "2024-01-02"])  # the declared days
    assert len(domains["offence"]) == 18 and len(domains["region"]) == 8 and domains["week"] == ["2024-W01"]
    assert domains["age_band"][:2] == ["[0, 9]", "[10, 19]"] and domains["sex"] == ["F", "M", "X"]
    tables = count_tables(groups, list(spec.dp.groupings), domains, 0.5)
    sizes = [len(t.counts) for t in tables]
    assert sizes == [18, 8 * 18, 13 * 3 * 18, 8, 13 * 3]
    for table in tables:
        _, exact = exact_counts(groups, table.by, domains)
        assert exact.sum() == len(crime)
        assert table.rho == pytest.approx(0.1) and table.sd == pytest.approx(1 / np.sqrt(0.2), rel=1e-6)
        assert list(table.counts) != exact.tolist()  # no count table equals the exact counts
        assert table.to_frame()["ci95"].iloc[0] == table.ci95
    # published as drawn: the 702-cell table of 300 reports is mostly empty cells, about half of them negative
    assert min(tables[2].counts) < 0 and sum(c < 0 for c in tables[2].counts) > 200


def test_values_outside_the_domain_count_nowhere() -> None:
    frame = pd.DataFrame({"a": ["x", "y", "zz", None]})
    cells, exact = exact_counts(frame, ("a",), {"a": ["x", "y", "z"]})
    assert cells == [("x",), ("y",), ("z",)] and exact.tolist() == [1, 1, 0]
    with pytest.raises(SpecError, match="no public domain"):
        exact_counts(frame, ("b",), {"a": ["x"]})


def test_person_level_bounds_each_person_per_block(crime: pd.DataFrame) -> None:
    frame = pd.DataFrame({"p": ["A"] * 5 + ["B"], "block": ["d1"] * 4 + ["d2", "d1"], "v": ["x"] * 6})
    kept = bound_contributions(frame, frame["p"], frame["block"], 2)
    assert kept["p"].tolist() == ["A", "A", "A", "B"]  # 2 of A's in d1, its one in d2, B's one
    tables = count_tables(frame, [("v",)], {"v": ["x"]}, 1.0, unit="person", person_column="p",
                          block_column="block", max_contributions=2)
    assert tables[0].unit == "person" and tables[0].max_contributions == 2
    spec = load_spec_data("crime")
    assert spec.dp is not None
    spec = spec.model_copy(update={"dp": spec.dp.model_copy(update={"person": ("name", "dob")})})
    assert person_keys(crime, spec).nunique() <= len(crime)


def test_adult_domains_come_from_the_hierarchies(adult_df: pd.DataFrame) -> None:
    spec = load_spec_data("adult")
    groups, domains = grouping_columns(adult_df.head(500), spec)
    assert domains["salary-class"] == ["<=50K", ">50K"] or set(domains["salary-class"]) == {"<=50K", ">50K"}
    assert "20-29" in domains["age_decade"] and groups.notna().all().all()


def test_the_period_domain_is_the_declared_days_not_the_rows(crime: pd.DataFrame) -> None:
    """One row from eleven weeks earlier neither grows the week domain nor gets a cell of its own."""
    spec = load_spec_data("crime")
    declared = ["2024-01-01", "2024-01-02"]
    _, before = grouping_columns(crime, spec, declared)
    outlier = crime.iloc[[0]].assign(event_time="2023-10-16T09:00:00Z")
    groups, after = grouping_columns(pd.concat([crime, outlier], ignore_index=True), spec, declared)
    assert after["week"] == before["week"] == ["2024-W01"]
    assert groups["week"].isna().sum() == 1  # the outlier counts in no week cell
    with pytest.raises(SpecError, match="needs declared days"):
        grouping_columns(crime, spec)
