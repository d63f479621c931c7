"""Whole-file reads (stream/io/tables.py) of exports as stations write them: any text encoding,
refused in one line when the file is not a table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from core.errors import InputDataError
from stream.io.specs import load_schema
from stream.io.tables import read_for_spec, read_table

ROWS = [("r1", "José Núñez", "01/08/2024 00:00", "F", "Agresión"),
        ("r2", "Zoë Müller", "02/13/2024 12:00:00 AM", "M", "Theft"),
        ("r3", "Renée O’Connor", "02/13/2024", "F", "Theft")]
SPEC = """
identifiers = ["report_id", "name"]
{input}
[[qi]]
name = "arrested"
type = "date"
hierarchy = {{ format = "us" }}

[[qi]]
name = "sex"
type = "categorical"
hierarchy = {{ rows = [["F", "*"], ["M", "*"]] }}

[sensitive]
name = "offence"
"""


def _export(tmp_path: Path, encoding: str, sep: str = ",", name: str = "export.csv") -> Path:
    lines = [sep.join(("report_id", "name", "arrested", "sex", "offence"))] + [sep.join(r) for r in ROWS]
    path = tmp_path / name
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode(encoding))
    return path


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "cp1252", "utf-16"])
def test_an_export_reads_the_same_in_any_encoding(tmp_path: Path, encoding: str) -> None:
    frame = read_table(_export(tmp_path, encoding, sep=";"))
    assert list(frame.columns) == ["report_id", "name", "arrested", "sex", "offence"]
    assert frame["name"].tolist() == [r[1] for r in ROWS] and frame["offence"].tolist()[0] == "Agresión"
    assert frame.attrs["encoding"] == {"utf-8": "utf-8", "utf-8-sig": "utf-8-sig", "cp1252": "cp1252",
                                       "utf-16": "utf-16"}[encoding]


def test_the_spec_can_declare_the_encoding(tmp_path: Path) -> None:
    path = _export(tmp_path, "cp1252")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(input='[input]\nencoding = "latin-1"\n'))  # wins over the detected cp1252
    schema = load_schema(spec)
    frame = read_for_spec(path, schema.spec, schema)
    assert frame["name"].tolist()[0] == "José Núñez" and frame["name"].tolist()[2] == "Renée O\x92Connor"
    assert frame.attrs["encoding"] == "iso8859-1"


def test_a_date_column_mixing_time_layouts_is_read_whole(tmp_path: Path) -> None:
    path = _export(tmp_path, "cp1252")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(input=""))
    schema = load_schema(spec)
    frame = read_for_spec(path, schema.spec, schema)
    assert frame["arrested"].tolist() == [r[2] for r in ROWS]


def test_bytes_the_declared_encoding_cannot_read_are_one_line(tmp_path: Path) -> None:
    path = _export(tmp_path, "cp1252")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(input='[input]\nencoding = "utf-8"\n'))
    schema = load_schema(spec)
    with pytest.raises(InputDataError) as err:
        read_for_spec(path, schema.spec, schema)
    assert str(err.value) == (f"{path}, line 2: byte 0xe9 is not UTF-8 text (the spec's [input] encoding declares "
                              "it; fix the file or the declared encoding)")


def test_a_utf8_file_with_a_stray_windows_byte_names_its_line(tmp_path: Path) -> None:
    good = "".join(f"r{i},Person {i},01/08/2024,F,Theft\r\n" for i in range(10))
    path = tmp_path / "mixed.csv"
    path.write_bytes(("report_id,name,arrested,sex,offence\r\nr0,Zoë,01/08/2024,F,Theft\r\n" + good).encode()
                     + "r99,José,01/08/2024,F,Theft\r\n".encode("cp1252"))
    with pytest.raises(InputDataError, match=r"mixed.csv, line 13: byte 0xe9 is not UTF-8 text \(the encoding the "):
        read_table(path)


@pytest.mark.parametrize(("make", "says"), [
    (lambda d: d, "is a folder, not a file"),
    (lambda d: d / "missing.csv", "input file not found"),
    (lambda d: (d / "x.csv").write_bytes(b"\x00\x01\x02PK\x03\x04" * 50) and d / "x.csv", "not a text file"),
    (lambda d: (d / "x.jsonl").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00") and d / "x.jsonl", "not a text file"),
])
def test_what_is_not_a_table_is_refused_before_reading(tmp_path: Path, make: Callable[[Path], Any], says: str) -> None:
    with pytest.raises(InputDataError, match=says):
        read_table(make(tmp_path))


def test_json_lines_in_windows_1252_are_read(tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl"
    path.write_bytes('{"report_id": "r1", "name": "José"}\n{"report_id": "r2", "name": "Zoë"}\n'.encode("cp1252"))
    frame = read_table(path)
    assert frame["name"].tolist() == ["José", "Zoë"] and frame.attrs["encoding"] == "cp1252"
    assert pd.api.types.is_object_dtype(frame["name"])
