"""The sensitive attribute by name and by content, its severity table, and the station column."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pandas as pd
import pytest

from stream.cli.main import main
from stream.specdraft.draft import make_draft
from stream.testing.exports import blind_headers, numbered_headers, outcome_only, with_outcomes
from tests.conftest import SHARED_DATA, shared

DATA = SHARED_DATA
NYPD_PARTS = ("nypd-arrests-queens-2021", "nypd_arrests_queens_2021.csv")


@pytest.fixture(scope="module")
def nypd() -> pd.DataFrame:
    return pd.read_csv(shared(*NYPD_PARTS), dtype=str, keep_default_na=False, nrows=1500)


def _draft(frame: pd.DataFrame, tmp_path: Path, name: str = "export") -> tuple[dict, str]:
    src, spec = tmp_path / f"{name}.csv", tmp_path / f"{name}.toml"
    frame.to_csv(src, index=False)
    assert main(["spec", "draft", str(src), "--out", str(spec)]) == 0
    assert main(["spec", "check", str(src), "--spec", str(spec), "--engine", "cg-kanon"]) == 0
    text = spec.read_text()
    return tomllib.loads(text), text


def test_the_offence_is_found_by_content_when_its_header_says_nothing(nypd: pd.DataFrame, tmp_path: Path) -> None:
    data, text = _draft(blind_headers(nypd), tmp_path)
    assert data["sensitive"]["name"] == "TYPE"  # OFNS_DESC renamed; the finer DETAIL (PD_DESC) maps onto it
    assert "describes the offence (content:" in text
    assert set(data["sensitive"]["severity"]) == set(nypd["OFNS_DESC"])
    assert "DETAIL" not in data["passthrough"] and "TYPE" not in {q["name"] for q in data["qi"]}


def test_with_no_header_at_all_the_offence_is_still_the_sensitive_attribute(nypd: pd.DataFrame,
                                                                           tmp_path: Path) -> None:
    frame = numbered_headers(nypd, seed=3)
    data, _ = _draft(frame, tmp_path)
    sens = frame[data["sensitive"]["name"]]
    assert set(sens) in (set(nypd["OFNS_DESC"]), set(nypd["PD_DESC"]))


def test_a_default_ranking_is_declared_and_said_to_be_one(nypd: pd.DataFrame, tmp_path: Path) -> None:
    data, text = _draft(blind_headers(nypd), tmp_path)  # no felony/misdemeanour column by name
    sev = data["sensitive"]["severity"]
    assert sev["RAPE"] == 5 and sev["ROBBERY"] == 5 and sev["PETIT LARCENY"] == 3
    assert "DEFAULT RANKING to review" in text


def test_an_outcome_is_protected_when_there_is_no_offence(nypd: pd.DataFrame, tmp_path: Path) -> None:
    data, _ = _draft(outcome_only(nypd), tmp_path)
    assert data["sensitive"]["name"] == "OFFICE_DISPOSITION"
    assert data.get("station_column") == "ARREST_PRECINCT"


def test_windows_are_never_routed_by_an_outcome_named_like_a_station(nypd: pd.DataFrame, tmp_path: Path) -> None:
    data, _ = _draft(with_outcomes(nypd), tmp_path)  # USE_OF_FORCE and OFFICE_DISPOSITION come first
    assert data["sensitive"]["name"] == "OFNS_DESC"
    assert data["station_column"] == "ARREST_PRECINCT"  # not USE_OF_FORCE (a Y/N flag) nor OFFICE_DISPOSITION


def test_no_station_column_rather_than_a_sensitive_one() -> None:
    frame = pd.DataFrame({
        "age": [str(20 + i % 40) for i in range(60)],
        "sex": ["F", "M"] * 30,
        "Agency Outcome": ["ARRESTED", "RELEASED", "SUMMONS"] * 20,
        "force": ["Y", "N", "N"] * 20,
    })
    draft = make_draft(frame, "x")
    assert draft.role("sensitive")[0].name == "Agency Outcome"
    assert "station_column" not in draft.keys


def test_a_description_of_premises_is_not_taken_for_the_offence() -> None:
    frame = pd.DataFrame({
        "age": [str(20 + i % 40) for i in range(60)],
        "Location Description": ["STREET", "RESIDENCE", "PARKING LOT", "SCHOOL"] * 15,
        "Primary Type": ["THEFT", "BATTERY", "NARCOTICS", "CRIMINAL DAMAGE", "ASSAULT"] * 12,
    })
    assert make_draft(frame, "x").role("sensitive")[0].name == "Primary Type"
