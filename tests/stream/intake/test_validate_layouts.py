"""Dates as exported, per report: the stream validator reads the layouts the spec declares (a list
of them, times of day included) exactly as the batch reader does, through core/contract.py."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from core.encoding import encode
from stream.intake.validate import Clean, Rejected, ReportValidator
from stream.io.specs import load_schema
from stream.io.tables import read_for_spec

SPEC = """
name = "layouts"
identifiers = ["report_id", "dob"]
time_column = "arrested"

[input]
dates = {{ dob = ["iso", "%d.%m.%Y"] }}

[[qi]]
name = "arrested"
type = "date"
hierarchy = {{ levels = ["day", "month", "year"], format = {fmt} }}

[[qi]]
name = "sex"
type = "categorical"
hierarchy = {{ rows = [["F", "*"], ["M", "*"]] }}

[sensitive]
name = "offence"
"""

# one real export's column: two time layouts in one column, plus a plain day
NYPD = ["01/08/2024 00:00", "02/13/2024 12:00:00 AM", "02/13/2024 12:30:00 PM", "12/31/2024"]


def _rows(days: list[str], dob: str = "1990-01-31") -> list[dict[str, str]]:
    return [{"report_id": f"r{i}", "station_id": "S1", "arrested": d, "dob": dob if i else "31.01.1990",
             "sex": "FM"[i % 2], "offence": "Theft"} for i, d in enumerate(days)]


def _both(tmp_path: Path, fmt: str, days: list[str]) -> tuple[list[str], list[Clean | Rejected]]:
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(fmt=fmt))
    schema = load_schema(spec)
    csv = tmp_path / "export.csv"
    pd.DataFrame(_rows(days)).to_csv(csv, index=False)
    qi = encode(read_for_spec(csv, schema.spec, schema), schema).qis[0]
    validator = ReportValidator(schema)
    return list(qi.labels[0][qi.codes]), [validator.check(dict(r)) for r in _rows(days)]


def test_an_export_mixing_time_layouts_is_read_whole_in_batch_and_stream(tmp_path: Path) -> None:
    batch, stream = _both(tmp_path, '"us"', NYPD)
    assert batch == ["2024-01-08", "2024-02-13", "2024-02-13", "2024-12-31"]
    assert all(isinstance(c, Clean) for c in stream), stream
    times = [c.event_time.isoformat() for c in stream if isinstance(c, Clean)]
    assert times == ["2024-01-08T00:00:00+00:00", "2024-02-13T00:00:00+00:00", "2024-02-13T12:30:00+00:00",
                     "2024-12-31T00:00:00+00:00"]
    assert [t[:10] for t in times] == batch


def test_a_list_of_layouts_reads_each_value_by_the_layout_that_fits(tmp_path: Path) -> None:
    days = ["2024/01/01 00:47:36", "01/08/2024 00:00", "02/13/2024 12:00:00 AM"]
    batch, stream = _both(tmp_path, '["us", "%Y/%m/%d %H:%M:%S"]', days)
    assert batch == ["2024-01-01", "2024-01-08", "2024-02-13"]
    assert [c.event_time.strftime("%Y-%m-%d") if isinstance(c, Clean) else c for c in stream] == batch


def test_values_no_declared_layout_reads_are_refused_per_report(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(fmt='["us", "%Y/%m/%d %H:%M:%S"]'))
    validator = ReportValidator(load_schema(spec))
    row = _rows(["x", "x"])[1]
    late = validator.check(row | {"arrested": "13/02/2024 00:00"})
    assert isinstance(late, Rejected) and late.reason == "invalid-time" and "13/02" not in late.message
    assert "one of MM/DD/YYYY" in late.message
    dob = validator.check(row | {"arrested": "01/08/2024", "dob": "1990/01/31"})
    assert isinstance(dob, Rejected) and dob.detail is not None
    assert (dob.reason, dob.detail.column) == ("invalid-value", "dob")
