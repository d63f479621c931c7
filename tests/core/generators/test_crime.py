"""The synthetic crime-report generator and the bundled crime spec that describes its records."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.encoding import encode
from core.errors import ParamsError
from core.generators import (
    DISTRICTS,
    OFFENCES,
    REPORTERS,
    SEVERITY,
    generate_crime_reports,
    iter_crime_reports,
    station_suburbs,
)
from stream.io.specs import load_schema, load_spec_data

COLUMNS = ["report_id", "station_id", "event_time", "name", "dob", "age", "sex", "suburb", "postcode", "reporter",
           "offence"]


@pytest.fixture(scope="module")
def reports() -> pd.DataFrame:
    return generate_crime_reports(np.random.default_rng(7), stations=2, days=2, per_day=3000)


def test_record_layout_and_unique_ids(reports: pd.DataFrame) -> None:
    assert list(reports.columns) == COLUMNS
    assert len(reports) == 2 * 2 * 3000
    assert reports["report_id"].is_unique
    assert set(reports["station_id"]) == {"S1", "S2"}
    assert reports.groupby(["station_id", reports["event_time"].str[:10]]).size().eq(3000).all()


def test_same_seed_same_reports_and_chunks_match() -> None:
    a = generate_crime_reports(np.random.default_rng(3), stations=2, days=2, per_day=200)
    b = generate_crime_reports(np.random.default_rng(3), stations=2, days=2, per_day=200)
    c = generate_crime_reports(np.random.default_rng(4), stations=2, days=2, per_day=200)
    pd.testing.assert_frame_equal(a, b)
    assert not a["offence"].equals(c["offence"])
    chunks = list(iter_crime_reports(np.random.default_rng(3), stations=2, days=2, per_day=200))
    assert [(ch.day, ch.station) for ch in chunks] == [(0, "S1"), (0, "S2"), (1, "S1"), (1, "S2")]
    pd.testing.assert_frame_equal(pd.concat([ch.frame for ch in chunks], ignore_index=True), a)


def test_times_are_utc_iso_within_the_day_and_ordered(reports: pd.DataFrame) -> None:
    t = pd.to_datetime(reports["event_time"], format="%Y-%m-%dT%H:%M:%SZ", utc=True)
    assert reports["event_time"].str.endswith("Z").all()
    assert set(t.dt.strftime("%Y-%m-%d")) == {"2024-01-01", "2024-01-02"}
    for _, grp in reports.groupby("station_id"):
        assert pd.to_datetime(grp["event_time"]).is_monotonic_increasing
    assert t.dt.hour.nunique() == 24


def test_dob_gives_exactly_the_age_on_the_event_day(reports: pd.DataFrame) -> None:
    event = pd.to_datetime(reports["event_time"]).dt.tz_localize(None).dt.normalize()
    dob = pd.to_datetime(reports["dob"])
    had_birthday = (event.dt.month > dob.dt.month) | ((event.dt.month == dob.dt.month) & (event.dt.day >= dob.dt.day))
    age = event.dt.year - dob.dt.year - (~had_birthday).astype(int)
    assert (age == reports["age"]).all()
    assert reports["name"].str.contains(" ").all()


def test_values_come_from_the_reference_tables(reports: pd.DataFrame) -> None:
    postcodes = {s: pc for _, subs in DISTRICTS.values() for s, pc, _ in subs}
    assert set(reports["offence"]) <= set(OFFENCES)
    assert set(reports["reporter"]) <= set(REPORTERS)
    assert set(reports["sex"]) <= {"F", "M", "X"}
    assert (reports["suburb"].map(postcodes) == reports["postcode"]).all()
    assert reports["postcode"].str.fullmatch(r"\d{4}").all()
    assert reports["age"].between(12, 95).all()


def test_realistic_frequencies_and_profiles(reports: pd.DataFrame) -> None:
    share = reports["offence"].value_counts(normalize=True)
    assert share["Theft"] > 0.15 and share.get("Murder", 0) < 0.02
    petty = reports["offence"].map(SEVERITY) <= 5
    assert petty.mean() > 0.6
    ages = reports.groupby("offence")["age"].mean()
    assert ages["Embezzlement"] > ages["Vandalism"] + 10
    men = reports.assign(m=reports["sex"] == "M").groupby("offence")["m"].mean()
    assert men["Robbery"] > men["Embezzlement"]
    officer = reports[reports["offence"] == "Drunken driving"]["reporter"].eq("officer").mean()
    assert officer > 0.7
    night = pd.to_datetime(reports["event_time"]).dt.hour.isin([22, 23, 0, 1, 2])
    assert night[reports["offence"] == "Assault"].mean() > night[reports["offence"] == "Fraud"].mean()


def test_stations_partition_the_suburbs(reports: pd.DataFrame) -> None:
    groups = station_suburbs(3)
    flat = [s for g in groups for s in g]
    assert len(flat) == len(set(flat)) == sum(len(subs) for _, subs in DISTRICTS.values())
    by_station = reports.groupby("station_id")["suburb"].apply(set)
    assert not (by_station["S1"] & by_station["S2"])
    assert by_station["S1"] <= set(station_suburbs(2)[0])


def test_bad_arguments_are_clear_errors() -> None:
    with pytest.raises(ParamsError, match="stations"):
        generate_crime_reports(np.random.default_rng(0), stations=0)
    with pytest.raises(ParamsError, match="per_day"):
        generate_crime_reports(np.random.default_rng(0), per_day=0)
    with pytest.raises(ParamsError, match="start"):
        generate_crime_reports(np.random.default_rng(0), start="yesterday")


def test_crime_spec_describes_the_generated_records(reports: pd.DataFrame) -> None:
    spec = load_spec_data("crime")
    assert spec.id_column == "report_id" and spec.station_column == "station_id"
    assert spec.time_column == "event_time"
    assert {"name", "dob", "report_id"} <= set(spec.identifiers)
    assert spec.qi_names == ["age", "sex", "suburb", "postcode", "reporter"]
    assert spec.sensitive is not None and spec.sensitive.severity == SEVERITY
    for paper, value in {"Embezzlement": 3, "Disorderly conduct": 3, "Theft": 5, "Drunken driving": 5,
                         "Robbery": 7, "Murder": 25}.items():
        assert spec.sensitive.severity is not None and spec.sensitive.severity[paper] == value
    batch = encode(reports, load_schema("crime"))
    assert batch.n == len(reports)
    assert "name" not in batch.frame.columns and "report_id" not in batch.frame.columns
    suburb = batch.qis[2]
    assert set(suburb.labels[1]) == set(DISTRICTS)
