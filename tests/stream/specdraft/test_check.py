"""`anonstream spec check`: exact counts of bad values on a fixture built with known bad rows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from stream.cli.main import main
from stream.io.specs import load_schema
from stream.io.tables import read_table
from stream.specdraft.check import check_frame
from stream.testing.reports import day_of_reports


def _fixture(tmp_path: Path, bad: bool) -> Path:
    rows = day_of_reports(1, 300, seed=5)["S1"]
    if bad:
        for i in (3, 50, 51):
            rows[i] = rows[i] | {"suburb": "Nowhere"}  # outside the suburb tree
        for i, v in ((7, "forty"), (8, "34.5"), (9, "")):
            rows[i] = rows[i] | {"age": v}  # two unparseable (text, not whole), one missing
        rows[10] = rows[10] | {"age": 130}  # outside the age domain [0, 120]
        for i in (20, 21):
            rows[i] = rows[i] | {"offence": "theft"}  # not in the severity table
        rows[30] = rows[30] | {"sex": ""}
    path = tmp_path / ("bad.csv" if bad else "good.csv")
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_spec_check_counts_every_kind_of_bad_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _fixture(tmp_path, bad=True)
    schema = load_schema("crime")
    report = check_frame(read_table(path), schema, k=5, max_suppression=0.05)
    cols = {c.name: c for c in report.columns}
    assert (cols["suburb"].outside, cols["suburb"].unparseable, cols["suburb"].missing) == (3, 0, 0)
    assert cols["suburb"].examples == ["'Nowhere'"]
    assert (cols["age"].unparseable, cols["age"].outside, cols["age"].missing) == (2, 1, 1)
    assert (cols["offence"].outside, cols["sex"].missing) == (2, 1)
    assert (cols["postcode"].outside, cols["reporter"].outside) == (0, 0)
    assert report.bad_rows == 3 + 3 + 2 and not report.fits
    assert main(["spec", "check", str(path), "--spec", "crime"]) == 1
    out = capsys.readouterr().out
    assert "does not fit" in out and "'forty', '34.5', '130'" in out and "'theft'" in out


def test_spec_check_passes_clean_data_with_a_feasibility_estimate(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "check", str(_fixture(tmp_path, bad=False)), "--spec", "crime", "-k", "5"]) == 0
    out = capsys.readouterr().out
    assert "the data fits the spec" in out and "optimal at k=5, max suppression 0.05: suppresses" in out


def test_spec_check_flags_an_identifier_that_would_be_released(tmp_path: Path) -> None:
    from stream.io.specs import SPEC_DIR

    text = (SPEC_DIR / "crime.toml").read_text()
    text = text.replace('identifiers = ["report_id", "name", "dob"]', 'identifiers = ["report_id", "dob"]')
    text = text.replace("passthrough = []", 'passthrough = ["name"]')
    spec = tmp_path / "leaky.toml"
    spec.write_text(text)
    report = check_frame(read_table(_fixture(tmp_path, bad=False)), load_schema(spec), k=5, max_suppression=0.05)
    assert not report.fits
    assert report.problems == ["name: looks like an identifier and would be released unchanged"]


def test_spec_check_says_what_the_engine_asked_for_needs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stream.io.specs import SPEC_DIR

    good = str(_fixture(tmp_path, bad=False))
    assert main(["spec", "check", good, "--spec", "crime", "--engine", "cg-kanon"]) == 0
    text = (SPEC_DIR / "crime.toml").read_text()
    bare = tmp_path / "no-severity.toml"
    bare.write_text(text[: text.index("[sensitive.severity]")])  # the offence stays sensitive, without severities
    capsys.readouterr()
    assert main(["spec", "check", good, "--spec", str(bare)]) == 0  # fits the data; no engine asked
    assert main(["spec", "check", good, "--spec", str(bare), "--engine", "cg-kanon"]) == 1
    out = capsys.readouterr().out
    assert "--engine cg-kanon needs a severity table for sensitive attribute 'offence'" in out
    none = tmp_path / "no-sensitive.toml"
    none.write_text(text[: text.index("[sensitive]")])
    assert main(["spec", "check", good, "--spec", str(none), "--engine", "cg-diverse"]) == 1
    assert "--engine cg-diverse needs a sensitive attribute with a severity table" in capsys.readouterr().out
    assert main(["spec", "check", good, "--spec", str(none), "--engine", "mondrian"]) == 0


def test_spec_check_refuses_an_unknown_engine_before_any_work(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "check", str(tmp_path / "absent.csv"), "--spec", "crime", "--engine", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown engine 'nope'")


def test_spec_check_names_station_ids_that_are_one_station_as_a_warning(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    rows = day_of_reports(1, 300, seed=5)["S1"]
    for i, r in enumerate(rows[:120]):  # one station written `08` by one system and `8` by another
        r["station_id"] = "08" if i % 2 else "8"
    path = tmp_path / "two-spellings.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    report = check_frame(read_table(path), load_schema("crime"), k=5, max_suppression=0.05)
    line = "station ids `08` and `8` are one station after normalisation (leading zeros and spaces are ignored)"
    assert report.warnings == [line] and report.fits  # a warning, not a failure
    assert main(["spec", "check", str(path), "--spec", "crime"]) == 0
    out = capsys.readouterr().out
    assert f"warning: {line}" in out and "the data fits the spec" in out


def test_spec_check_compares_report_ids_as_the_stream_does(tmp_path: Path) -> None:
    rows = day_of_reports(1, 300, seed=5)["S1"]
    rows[0]["report_id"], rows[1]["report_id"] = "0042", "42"  # one station: one report id, sent twice
    rows[2]["report_id"], rows[3] = "0050", rows[3] | {"report_id": "50", "station_id": "S2"}  # two stations
    path = tmp_path / "padded-ids.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    report = check_frame(read_table(path), load_schema("crime"), k=5, max_suppression=0.05)
    assert report.problems == ["id_column 'report_id': 2 repeated report id(s)"]  # as the spec's global check counts
    assert report.warnings == ["report ids `0042` and `42` are one report after normalisation (leading zeros and "
                               "spaces are ignored)"]  # `0050` and `50` are reports of two stations
