"""What a file is before it is read (stream/io/text.py): its encoding, or one line saying why not."""

from __future__ import annotations

import codecs
import logging
import struct
from pathlib import Path

import pytest

from core.errors import InputDataError, SpecError
from core.schema import parse_spec
from stream.io import text

HEADER = "report_id,name,offence\n"
ROWS = "r1,José Núñez,Agresión\nr2,Zoë Müller,Theft\nr3,Bob,Theft\n"


def _file(tmp_path: Path, data: bytes, name: str = "export.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("data", "codec", "how"), [
    ((HEADER + "r1,Bob,Theft\n").encode("ascii"), "utf-8", "utf-8"),
    ((HEADER + ROWS).encode("utf-8"), "utf-8", "utf-8"),
    (codecs.BOM_UTF8 + (HEADER + ROWS).encode("utf-8"), "utf-8-sig", "bom"),
    ((HEADER + ROWS).encode("utf-16"), "utf-16", "bom"),
    ((HEADER + ROWS).encode("utf-32"), "utf-32", "bom"),
    ((HEADER + ROWS).encode("cp1252"), "cp1252", "detected"),
])
def test_the_encoding_of_an_export_is_detected(tmp_path: Path, data: bytes, codec: str, how: str) -> None:
    path = _file(tmp_path, data)
    found = text.detect(path)
    assert (found.codec, found.how) == (codec, how)
    assert path.read_bytes().decode(found.codec).replace("\ufeff", "") == HEADER + (
        "r1,Bob,Theft\n" if data.isascii() else ROWS)


def test_a_windows_1252_export_with_one_accented_name_is_read_as_windows_1252(tmp_path: Path) -> None:
    lines = [HEADER] + [f"r{i},Person {i},Theft\n" for i in range(5000)]
    lines[2500] = "r2500,Renée O'Connor,Theft\n"
    path = _file(tmp_path, "".join(lines).encode("cp1252"))
    assert text.detect(path).codec == "cp1252"


def test_text_past_the_first_block_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text, "BLOCK", 64)
    ascii_rows = "".join(f"r{i},Person,Theft\n" for i in range(40))
    path = _file(tmp_path, (HEADER + ascii_rows + ROWS).encode("cp1252"))
    assert text.detect(path).codec == "cp1252"
    utf8 = _file(tmp_path, (HEADER + ascii_rows + ROWS).encode("utf-8"), "utf8.csv")
    assert text.detect(utf8).codec == "utf-8"


def test_a_declared_encoding_wins(tmp_path: Path) -> None:
    path = _file(tmp_path, (HEADER + "r1,Łukasz Żółw,Kradzież\n").encode("cp1250"))
    found = text.detect(path, "windows-1250")
    assert (found.codec, found.how) == ("cp1250", "declared")
    assert "Łukasz Żółw" in path.read_bytes().decode(found.codec)
    bom = _file(tmp_path, codecs.BOM_UTF8 + HEADER.encode(), "bom.csv")
    assert text.detect(bom, "utf-8").codec == "utf-8-sig"  # the mark never joins the first column's name


def test_only_what_cannot_be_text_is_refused(tmp_path: Path) -> None:
    png = _file(tmp_path, b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + bytes(range(256)), "photo.csv")
    zipped = _file(tmp_path, b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(200), "export.csv")
    for path in (png, zipped):
        with pytest.raises(InputDataError, match=r"is not a text file \(binary content\)") as err:
            text.detect(path)
        assert err.value.reason == "not-text" and str(path) in str(err.value)
    with pytest.raises(InputDataError, match="not a text file"):
        text.detect(png, "cp1252")  # a declared single-byte encoding does not make NUL bytes text
    assert text.detect(_file(tmp_path, "a,b\n1,2\n".encode("utf-16-le"), "wide.csv"), "utf-16-le").codec == "utf-16-le"


def test_check_input_refuses_folders_missing_and_empty_files(tmp_path: Path) -> None:
    cases = {tmp_path: ("is a folder, not a file", "not-a-file"),
             tmp_path / "absent.csv": ("input file not found", "file-not-found"),
             _file(tmp_path, b"", "empty.csv"): ("input is empty", "empty-input")}
    for path, (says, reason) in cases.items():
        with pytest.raises(InputDataError, match=says) as err:
            text.check_input(path)
        assert err.value.reason == reason
    assert text.check_input(_file(tmp_path, b"PAR1\x00\x00", "t.parquet")).suffix == ".parquet"  # not sniffed


def test_the_encoding_used_is_said_when_it_is_not_utf8(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cp = _file(tmp_path, (HEADER + ROWS).encode("cp1252"), "cp.csv")
    utf8 = _file(tmp_path, (HEADER + ROWS).encode("utf-8"), "u.csv")
    with caplog.at_level(logging.INFO, logger="stream.io.text"):
        assert text.text_encoding(utf8) == "utf-8"
        assert not caplog.records
        assert text.text_encoding(cp) == "cp1252"
        assert text.text_encoding(cp, "latin-1") == "iso8859-1"
    notes = [r.getMessage() for r in caplog.records]
    assert notes == ["cp.csv: text read as Windows-1252 (cp1252), detected (if that is wrong, set encoding in the "
                     "spec's [input])", "cp.csv: text read as ISO-8859-1 (iso8859-1), as the spec's [input] "
                     "encoding says"]


def test_bytes_the_encoding_cannot_read_are_one_line_naming_the_line(tmp_path: Path) -> None:
    data = (HEADER + "r1,Bob,Theft\n").encode() + "r2,José,Theft\n".encode("cp1252")
    path = _file(tmp_path, data)
    err = text.decode_error(path, "utf-8", declared=True)
    assert str(err) == f"{path}, line 3: byte 0xe9 is not UTF-8 text (the spec's [input] encoding declares it; " \
                       "fix the file or the declared encoding)"
    assert err.reason == "invalid-encoding"
    assert "declare the file's encoding" in str(text.decode_error(path, "utf-8", declared=False))


@pytest.mark.parametrize("name", ["utf-9", "base64", "rot13"])
def test_an_unknown_declared_encoding_is_a_spec_error(name: str) -> None:
    with pytest.raises(SpecError, match=rf"spec field 'input.encoding': unknown encoding '{name}'"):
        parse_spec({"input": {"encoding": name}, "qi": [{"name": "d", "type": "date"}]})
    assert parse_spec({"input": {"encoding": "Windows-1252"}, "qi": [{"name": "d", "type": "date"}]}).input.encoding


def test_text_that_reads_badly_as_windows_1252_gets_its_own_code_page(tmp_path: Path) -> None:
    names = ["Иван Петров", "Мария Смирнова", "Кража", "Грабёж", "Москва"]
    body = "id,name\n" + "".join(f"{i},{names[i % len(names)]}\n" for i in range(50))
    path = _file(tmp_path, body.encode("cp1251"))
    assert text.detect(path).codec == "cp1251"
