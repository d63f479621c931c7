"""Batch and stream read one file one way: the rows ``anonymize`` hands to the engine are the rows
``push`` hands to the intake, for the odd files stations export (stream/io/rows.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.errors import InputDataError
from core.generators import generate_crime_reports
from stream.cli.main import main
from stream.intake.validate import Clean, ReportValidator
from stream.io.rows import rows_for_spec
from stream.io.specs import load_schema
from stream.io.tables import line_numbers, read_for_spec
from stream.station.producer import as_sent

SCHEMA = load_schema("crime")


def _reports() -> pd.DataFrame:
    df = generate_crime_reports(np.random.default_rng(7), stations=1, days=2, per_day=15)
    df.loc[1, "name"] = "José Núñez"
    df.loc[3, "name"] = "Renée O’Connor"
    return df


def _csv(df: pd.DataFrame, path: Path, encoding: str, sep: str = ",") -> Path:
    path.write_bytes(df.to_csv(index=False, sep=sep).encode(encoding))
    return path


def _quoted_newlines(df: pd.DataFrame, path: Path) -> Path:
    df = df.copy()
    df.loc[2, "name"] = "Jane\nRoe"  # a cell over two lines: every later row starts a line further down
    df.loc[5, "name"] = "A;B, \"C\"\r\nD"
    return _csv(df, path, "utf-8")


def _jsonl(df: pd.DataFrame, path: Path) -> Path:
    records = df.to_dict("records")
    del records[4]["name"]  # a key one object lacks
    path.write_text(pd.DataFrame(records).to_json(orient="records", lines=True, force_ascii=False), encoding="utf-8")
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line]
    lines[4] = lines[4].replace('"name":null,', "")
    path.write_text("\n".join(lines[:3] + [""] + lines[3:]) + "\n", encoding="utf-8")  # and a blank line
    return path


def _parquet(df: pd.DataFrame, path: Path) -> Path:
    df.astype({"age": "int64"}).to_parquet(path, index=False)  # typed values: integers, not strings
    return path


ODD: dict[str, Callable[[pd.DataFrame, Path], Path]] = {
    "utf-8 with a byte-order mark, ';'": lambda df, d: _csv(df, d / "bom.csv", "utf-8-sig", ";"),
    "windows-1252": lambda df, d: _csv(df, d / "cp1252.csv", "cp1252"),
    "utf-16": lambda df, d: _csv(df, d / "utf16.csv", "utf-16"),
    "quoted line breaks": lambda df, d: _quoted_newlines(df, d / "newlines.csv"),
    "json lines": lambda df, d: _jsonl(df, d / "reports.jsonl"),
    "parquet": lambda df, d: _parquet(df, d / "reports.parquet"),
}


def _text(v: object) -> str | None:
    return None if v is None else str(v)


@pytest.mark.parametrize("kind", list(ODD))
def test_batch_and_push_hand_on_the_same_rows_from_the_same_lines(kind: str, tmp_path: Path) -> None:
    source = _reports()
    path = ODD[kind](source, tmp_path)
    frame = read_for_spec(path, SCHEMA.spec, SCHEMA)  # what anonymize encodes for the engine
    pushed = list(rows_for_spec(path, SCHEMA.spec.input))  # what push validates and sends
    used = [c for c in SCHEMA.spec.used_columns() if c in frame.columns]
    assert len(frame) == len(pushed) == len(source)
    assert line_numbers(frame, range(len(frame))) == [line for line, _ in pushed]
    validator = ReportValidator(SCHEMA)
    for i, (_line, raw) in enumerate(pushed):
        sent = as_sent(raw, "station_id", None)
        assert isinstance(validator.check(dict(sent)), Clean)
        assert {c: _text(sent.get(c)) for c in used} == {c: _text(frame[c].iloc[i]) for c in used}
        # and both are the file's own values (the oracle: the frame the file was written from)
        want = {c: _text(source[c].iloc[i]) for c in used}
        if kind == "json lines" and i == 4:
            want.pop("name", None)
        assert want == {c: _text(frame[c].iloc[i]) for c in want}


def _duplicate_date(tmp_path: Path) -> Path:
    df = _reports()
    cols = list(df.columns)
    path = tmp_path / "export.csv"
    with_copy = df[cols[:5]].assign(event_time_2=df["event_time"]).join(df[cols[5:]])
    header = ",".join(cols[:5] + ["event_time"] + cols[5:])
    path.write_text(header + "\n" + with_copy.to_csv(index=False, header=False), encoding="utf-8")
    return path


def test_a_column_named_twice_is_refused_by_both_naming_it_and_both_positions(tmp_path: Path) -> None:
    path = _duplicate_date(tmp_path)
    said = "column 'event_time' appears twice in the header, as column 3 and column 6"
    with pytest.raises(InputDataError, match=said):
        read_for_spec(path, SCHEMA.spec, SCHEMA)
    with pytest.raises(InputDataError, match=said):
        next(rows_for_spec(path, SCHEMA.spec.input))


def test_json_keys_and_parquet_columns_named_twice_are_refused(tmp_path: Path) -> None:
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text('{"report_id": "1", "age": 3}\n{"report_id": "2", "age": 3, "age": 4}\n', encoding="utf-8")
    with pytest.raises(InputDataError, match=r"r.jsonl, line 2: key 'age' appears twice in one object, as key 2 "
                                             "and key 3"):
        read_for_spec(jsonl, SCHEMA.spec, SCHEMA)
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = tmp_path / "r.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["1"]), pa.array(["a"]), pa.array(["b"])],
                                        names=["report_id", "name", "name"]), parquet)
    with pytest.raises(InputDataError, match="column 'name' appears twice in the header, as column 2 and column 3"):
        next(rows_for_spec(parquet, SCHEMA.spec.input))


@pytest.mark.parametrize("command", [["anonymize", "--spec", "crime", "--engine", "mondrian", "-k", "5"],
                                     ["push", "--spec", "crime", "--broker", "kafka://127.0.0.1:1"]])
def test_anonymize_and_push_refuse_it_in_one_line_exit_2(command: list[str], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANONSTREAM_HOME", str(tmp_path / "home"))
    path = _duplicate_date(tmp_path)
    assert main([command[0], str(path), *command[1:]]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and "column 'event_time' appears twice in the header, as column 3 and column 6" in err[0]
