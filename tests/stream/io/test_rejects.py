"""The rejects file: the on-screen hint in a column, formulas neutralised, created 0600, a header saying it
holds identifiers; and push reads it back as the original rows (reject_ columns and the note ignored)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from stream.io.rejects import NOTE, Hints, RejectDetail, Rejection, RejectsWriter
from stream.io.rows import iter_rows
from stream.io.specs import load_schema
from stream.testing.reports import day_of_reports, spec_ref


@pytest.fixture(scope="module")
def hints() -> Hints:
    return Hints(load_schema(spec_ref()))


def _rows() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [{k: str(v) for k, v in r.items()} for r in day_of_reports(1, 3, seed=8)["S1"]]
    rows[0] |= {"offence": "theft", "name": "=HYPERLINK(\"http://x\")"}  # a formula in an identifier
    rows[1] |= {"age": "-5", "name": "+cmd|' /C calc'!A0", "suburb": "@SUM(A1)"}
    rows[2] |= {"report_id": "-S1-000003", "name": "Jane Roe"}
    return rows


def _write(path: Path, hints: Hints, rows: list[dict[str, object]]) -> None:
    writer = RejectsWriter(path, list(rows[0]), hints)
    writer.write(rows[0], Rejection(2, "unknown-offence", "field 'offence': not in the severity table",
                                    RejectDetail("offence", "theft")))
    writer.write(rows[1], Rejection(3, "invalid-value", "field 'age': out of range", RejectDetail("age", "-5")))
    writer.write(rows[2], Rejection(4, "duplicate-id", "field 'report_id': report id already on line 2",
                                    RejectDetail("report_id", "-S1-000003")))
    writer.close()


def test_a_csv_rejects_file_is_private_safe_to_open_and_says_it_holds_identifiers(tmp_path: Path, hints: Hints) -> None:
    path = tmp_path / "rejects.csv"
    path.write_text("old content\n")
    path.chmod(0o644)  # an existing file is overwritten and made private
    rows = _rows()
    _write(path, hints, rows)
    assert path.stat().st_mode & 0o777 == 0o600
    with path.open(newline="") as fh:
        table = list(csv.reader(fh))
    header, cells = table[0], [dict(zip(table[0], r, strict=True)) for r in table[1:]]
    assert header[0] == NOTE and "holds identifiers" in NOTE
    assert header[1:5] == ["reject_line", "reject_reason", "reject_message", "reject_hint"]
    assert header[5:] == list(rows[0])
    assert [c["reject_hint"] for c in cells] == ["did you mean 'Theft'?", "use a whole number", ""]
    assert cells[0]["name"] == "'=HYPERLINK(\"http://x\")"  # a spreadsheet shows it as text, never runs it
    assert cells[1]["name"] == "'+cmd|' /C calc'!A0" and cells[1]["suburb"] == "'@SUM(A1)"
    assert cells[1]["age"] == "-5"  # a plain number stays a number
    assert cells[2]["report_id"] == "'-S1-000003"
    every = [v for c in cells for v in c.values()]
    assert not any(v.startswith(("=", "+", "@")) or (v.startswith("-") and v != "-5") for v in every)

    # pushed back: the original rows exactly, without the note and reject_ columns or the quotes
    back = list(iter_rows(path))
    assert [line for line, _row in back] == [2, 3, 4]
    assert [row for _line, row in back] == rows


def test_a_jsonl_rejects_file_starts_with_its_note_and_reads_back_as_the_rows(tmp_path: Path, hints: Hints) -> None:
    path = tmp_path / "rejects.jsonl"
    rows = _rows()
    _write(path, hints, rows)
    assert path.stat().st_mode & 0o777 == 0o600
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert list(lines[0]) == ["reject_note"] and "holds identifiers" in lines[0]["reject_note"]
    assert lines[1]["reject_hint"] == "did you mean 'Theft'?" and lines[1]["name"] == rows[0]["name"]
    assert [row for _line, row in iter_rows(path)] == rows


def test_a_file_without_reject_columns_is_read_as_written(tmp_path: Path) -> None:
    path = tmp_path / "plain.csv"
    path.write_text("report_id,name\nS1-1,'=x\n")
    assert [row for _line, row in iter_rows(path)] == [{"report_id": "S1-1", "name": "'=x"}]
