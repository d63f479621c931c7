"""Streaming reads for ``push`` (stream/io/rows.py): any text encoding, bad bytes named by line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.errors import InputDataError
from stream.io import text
from stream.io.rows import csv_header, iter_rows

HEADER = "report_id;name;offence\r\n"


def test_a_windows_1252_export_streams_in_chunks_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text, "BLOCK", 256)  # the first accented name lies beyond the first block
    body = HEADER + "".join(f"r{i};Person {i};Theft\r\n" for i in range(50)) + "r50;José Núñez;Agresión\r\n"
    path = tmp_path / "export.csv"
    path.write_bytes(body.encode("cp1252"))
    rows = list(iter_rows(path))
    assert len(rows) == 51 and rows[-1] == (52, {"report_id": "r50", "name": "José Núñez", "offence": "Agresión"})
    assert csv_header(path) == (["report_id", "name", "offence"], ";")


def test_a_utf8_bom_never_joins_the_first_column_name(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_bytes(("\ufeff" + HEADER + "r1;Zoë;Theft\r\n").encode("utf-8"))
    assert list(iter_rows(path)) == [(2, {"report_id": "r1", "name": "Zoë", "offence": "Theft"})]
    assert csv_header(path, encoding="utf-8")[0][0] == "report_id"


def test_a_declared_encoding_wins_and_a_byte_it_cannot_read_stops_the_read_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_bytes((HEADER + "r1;Bob;Theft\r\n").encode() + "r2;José;Theft\r\n".encode("cp1252"))
    assert [r["name"] for _, r in iter_rows(path, encoding="cp1252")] == ["Bob", "José"]
    rows = iter_rows(path, encoding="utf-8")
    with pytest.raises(InputDataError, match=r"export.csv, line 3: byte 0xe9 is not UTF-8 text") as err:
        list(rows)
    assert err.value.reason == "invalid-encoding"


def test_json_lines_stream_in_their_encoding(tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl"
    path.write_bytes('{"report_id": "r1", "name": "Zoë"}\n\n{"report_id": "r2", "name": "Renée"}\n'.encode("cp1252"))
    assert [(n, r["name"]) for n, r in iter_rows(path)] == [(1, "Zoë"), (3, "Renée")]


@pytest.mark.parametrize(("make", "says"), [
    (lambda d: d, "is a folder, not a file"),
    (lambda d: (d / "x.csv").write_bytes(b"\x7fELF\x02\x01\x01\x00" * 20) and d / "x.csv", "not a text file"),
])
def test_what_is_not_a_table_is_refused_before_the_first_row(tmp_path: Path, make: Callable[[Path], Any],
                                                             says: str) -> None:
    rows = iter_rows(make(tmp_path))
    with pytest.raises(InputDataError, match=says):
        next(rows)
