"""One input contract for batch and stream: declared date formats, ambiguity, missing values.

The batch path (stream/io/tables.py, `anonstream anonymize`) and the stream validator
(stream/intake/validate.py, used by workers and `push`) must read the same file the same way.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from core.encoding import encode
from core.errors import InputDataError
from stream.cli.main import main
from stream.intake.validate import Clean, Rejected, ReportValidator
from stream.io.specs import load_schema
from stream.io.tables import read_for_spec

SPEC = """
name = "dates"
identifiers = ["report_id", "dob"]
id_column = "report_id"
station_column = "station_id"
time_column = "day"

[input]
on_missing = "{policy}"
dates = {{ dob = "iso" }}

[[qi]]
name = "day"
type = "date"
hierarchy = {{ levels = ["day", "month", "year"]{fmt} }}

[[qi]]
name = "sex"
type = "categorical"
hierarchy = {{ rows = [["F", "*"], ["M", "*"], ["(missing)", "*"]] }}

[[qi]]
name = "age"
type = "numeric"
hierarchy = {{ widths = [5, 10], domain = [0, 120], integer = true }}

[sensitive]
name = "offence"
severity = {{ "Theft" = 1, "Robbery" = 2 }}
"""

DAYS = ["05/10/2020", "16/08/2020", "01/02/2021", "12/12/2020"]


def _spec(tmp_path: Path, fmt: str | None, policy: str = "error") -> Path:
    path = tmp_path / f"spec-{abs(hash((fmt, policy)))}.toml"
    path.write_text(SPEC.format(fmt=f', format = "{fmt}"' if fmt else "", policy=policy))
    return path


def _rows(days: list[str]) -> list[dict[str, str]]:
    return [{"report_id": f"r{i}", "station_id": "S1", "day": d, "dob": "1990-01-31", "sex": "FM"[i % 2],
             "age": str(20 + i), "offence": "Theft"} for i, d in enumerate(days)]


def _stream_days(spec_path: str | Path, rows: list[dict[str, str]]) -> list[str]:
    v = ReportValidator(load_schema(spec_path))
    out = [v.check(dict(r)) for r in rows]
    assert all(isinstance(c, Clean) for c in out), out
    return [c.event_time.strftime("%Y-%m-%d") for c in out if isinstance(c, Clean)]


def _batch_days(spec_path: Path, csv_path: Path) -> list[str]:
    schema = load_schema(spec_path)
    frame = read_for_spec(csv_path, schema.spec, schema)
    qi = encode(frame, schema).qis[0]
    return list(qi.labels[0][qi.codes])


@pytest.mark.parametrize(("fmt", "expected"), [
    ("day-first", ["2020-10-05", "2020-08-16", "2021-02-01", "2020-12-12"]),
    ("%d/%m/%Y", ["2020-10-05", "2020-08-16", "2021-02-01", "2020-12-12"]),
])
def test_a_day_first_file_is_read_by_its_format_in_batch_and_stream(tmp_path: Path, fmt: str,
                                                                    expected: list[str]) -> None:
    spec = _spec(tmp_path, fmt)
    csv = tmp_path / "day-first.csv"
    pd.DataFrame(_rows(DAYS)).to_csv(csv, index=False)
    assert _batch_days(spec, csv) == expected
    assert _stream_days(spec, _rows(DAYS)) == expected


def test_a_us_file_is_read_by_its_format_in_batch_and_stream(tmp_path: Path) -> None:
    us = ["10/05/2020", "08/16/2020", "02/01/2021", "12/12/2020"]
    spec = _spec(tmp_path, "us")
    csv = tmp_path / "us.csv"
    pd.DataFrame(_rows(us)).to_csv(csv, index=False)
    expected = ["2020-10-05", "2020-08-16", "2021-02-01", "2020-12-12"]
    assert _batch_days(spec, csv) == expected
    assert _stream_days(spec, _rows(us)) == expected


def test_a_file_mixing_formats_is_refused_naming_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mixed = ["10/05/2020", "08/16/2020", "16/08/2020", "12/12/2020"]  # line 4 is day-first in a US file
    csv = tmp_path / "mixed.csv"
    pd.DataFrame(_rows(mixed)).to_csv(csv, index=False)
    spec = _spec(tmp_path, "us")
    assert main(["anonymize", str(csv), "--spec", str(spec), "--engine", "mondrian", "-k", "2"]) == 2
    err = capsys.readouterr().err
    assert "column 'day'" in err and "'16/08/2020'" in err and "line 4" in err
    rej = ReportValidator(load_schema(spec)).check(_rows(mixed)[2])
    assert isinstance(rej, Rejected) and rej.reason == "invalid-time" and "16/08" not in rej.message

    # without a declared format, a day/month-swappable value is ambiguous: refused, line named
    undeclared = _spec(tmp_path, None)
    # (12/12/2020 reads the same either way, so it is not ambiguous)
    with pytest.raises(InputDataError, match=r"ambiguous dates.*: '10/05/2020' \(1 in all; line 2\)"):
        read_for_spec(csv, load_schema(undeclared).spec, load_schema(undeclared))


def test_impossible_dates_and_fractional_ages_are_refused_in_batch_and_stream(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "us")
    schema = load_schema(spec)
    rows = _rows(["10/05/2020"] * 3)
    rows[1]["dob"] = "1990-13-45"
    rows[2]["age"] = "34.5"
    v = ReportValidator(schema)
    got = [v.check(dict(r)) for r in rows]
    assert isinstance(got[0], Clean)
    assert isinstance(got[1], Rejected) and isinstance(got[2], Rejected)
    assert got[1].detail is not None and got[2].detail is not None
    assert (got[1].reason, got[1].detail.column) == ("invalid-value", "dob")
    assert (got[2].reason, got[2].detail.column) == ("invalid-value", "age")
    assert got[1].message != got[2].message
    assert "1990-13-45" not in got[1].message and "34.5" not in got[2].message  # values never go to the DLQ
    outside = v.check(rows[0] | {"sex": "Q"})
    assert isinstance(outside, Rejected) and outside.reason == "value-not-in-hierarchy"
    assert outside.message == "field 'sex': value is not one of the values its hierarchy lists"
    text = v.check(rows[0] | {"age": "forty"})
    assert isinstance(text, Rejected)
    assert (text.reason, text.message) == ("invalid-value", "field 'age': value is not a number")
    for bad in (1, 2):
        csv = tmp_path / f"bad{bad}.csv"
        pd.DataFrame([rows[0], rows[bad]]).to_csv(csv, index=False)
        with pytest.raises(InputDataError, match="line 3"):
            read_for_spec(csv, schema.spec, schema)


@pytest.mark.parametrize("policy", ["error", "drop", "leaf"])
def test_missing_values_follow_one_policy_in_batch_and_stream(tmp_path: Path, policy: str) -> None:
    spec = _spec(tmp_path, "us", policy)
    schema = load_schema(spec)
    rows = _rows(["10/05/2020"] * 4)
    rows[2]["sex"] = ""
    csv = tmp_path / "gaps.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    verdicts = [ReportValidator(schema).check(dict(r)) for r in rows]
    if policy == "error":
        with pytest.raises(InputDataError, match=r"column 'sex' has 1 missing value\(s\), line\(s\) 4"):
            read_for_spec(csv, schema.spec, schema)
        assert isinstance(verdicts[2], Rejected) and verdicts[2].reason == "missing-field"
    elif policy == "drop":
        frame = read_for_spec(csv, schema.spec, schema)
        assert len(frame) == 3 and frame.attrs["dropped_missing"] == 1
        assert isinstance(verdicts[2], Rejected) and verdicts[2].reason == "missing-value"
    else:
        frame = read_for_spec(csv, schema.spec, schema)
        assert frame["sex"].tolist()[2] == "(missing)"
        assert isinstance(verdicts[2], Clean) and verdicts[2].data["sex"] == "(missing)"


def test_repeated_report_ids_are_found_across_runs_in_bounded_memory() -> None:
    from stream.io.dupes import repeated_ids

    ids = ["a", "b", "c", "a", "d", "e", "b", "f", "a", "", "g", "c"]
    rows = [(n + 2, {"report_id": r, "station_id": "S1"}) for n, r in enumerate(ids)]
    expected = {5: 2, 8: 3, 10: 2, 13: 4}
    for run_rows in (2, 3, 5, 100):  # runs of a few rows: duplicates across runs and inside one
        assert repeated_ids(iter(rows), "report_id", "station_id", None, run_rows=run_rows) == expected
    other_station = [(2, {"report_id": "a", "station_id": "S1"}), (3, {"report_id": "a", "station_id": "S2"})]
    assert repeated_ids(iter(other_station), "report_id", "station_id", None) == {}
