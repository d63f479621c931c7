"""Stream a station's file row by row, in bounded memory, with the line each row starts on.

``push`` uses this instead of :func:`stream.io.tables.read_table` so a file of any size is read,
validated and sent in chunks: memory depends on the chunk size, never on the file size. Line
numbers are the ones an editor shows (the header is line 1 of a CSV); Parquet rows are numbered
from 1. Values are strings as written in the file (CSV) or the JSON values (JSON lines).
"""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.errors import InputDataError
from stream.io.text import BINARY_SUFFIXES, check_input, decode_error, detect

# Columns a rejects file adds in front of the original row (after its note column, whose name starts
# with reject_note); push ignores them when a fixed rejects file is pushed again (stream/io/rejects.py).
REJECT_COLUMNS = ("reject_line", "reject_reason", "reject_message", "reject_hint")
Row = tuple[int, dict[str, Any]]


def is_reject_column(name: str) -> bool:
    return name in REJECT_COLUMNS or name.startswith("reject_note")


def _from_rejects(row: dict[str, Any], csv_cells: bool) -> dict[str, Any]:
    """A row of a rejects file without its reject_ columns; CSV cells lose the quote that kept a spreadsheet
    from running them as formulas (:func:`stream.wire.csvsafe.neutralize`)."""
    from stream.wire.csvsafe import unneutralize

    return {k: unneutralize(v) if csv_cells else v for k, v in row.items() if not is_reject_column(k)}


def csv_header(path: str | Path, sep: str | None = None, encoding: str | None = None) -> tuple[list[str], str]:
    """The header row and separator of a CSV (separator sniffed: ``,`` or ``;``), decoded by the declared
    ``encoding`` (the spec's ``[input] encoding``), else the detected one (:func:`stream.io.text.detect`)."""
    codec = detect(path, encoding).codec
    try:
        with Path(path).open(encoding=codec, newline="") as fh:
            head = fh.readline()
    except UnicodeDecodeError:
        raise decode_error(path, codec, declared=encoding is not None) from None
    sep = sep or (";" if head.count(";") > head.count(",") else ",")
    return next(csv.reader([head], delimiter=sep, skipinitialspace=True), []), sep


def _csv_rows(p: Path, sep: str | None, codec: str, declared: str | None) -> Iterator[Row]:
    header, sep = csv_header(p, sep, declared)
    with p.open(encoding=codec, newline="") as fh:
        reader = csv.reader(fh, delimiter=sep, skipinitialspace=True)
        next(reader, None)
        start = reader.line_num + 1
        for cells in reader:
            if cells:
                row = dict(zip(header, cells))
                for name in header[len(cells):]:  # a short row: its missing cells are empty
                    row[name] = ""
                yield start, row
            start = reader.line_num + 1


def jsonl_rows(p: Path, codec: str = "utf-8") -> Iterator[Row]:
    """(line number, object) of each non-blank line; a line that is not a JSON object stops the read."""
    with p.open(encoding=codec) as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputDataError(f"{p}, line {n}: not valid JSON ({exc.msg} at column {exc.colno})",
                                     reason="malformed-json") from None
            except RecursionError:
                raise InputDataError(f"{p}, line {n}: JSON nested too deeply", reason="malformed-json") from None
            if not isinstance(obj, dict):
                raise InputDataError(f"{p}, line {n}: a JSON {type(obj).__name__}, expected an object",
                                     reason="malformed-json")
            yield n, obj


def _parquet_rows(p: Path, batch_rows: int) -> Iterator[Row]:
    import pyarrow.parquet as pq

    n = 0
    for batch in pq.ParquetFile(p).iter_batches(batch_size=batch_rows):
        for row in batch.to_pylist():
            n += 1
            yield n, row


def iter_rows(path: str | Path, sep: str | None = None, batch_rows: int = 10_000,
              encoding: str | None = None) -> Iterator[Row]:
    """``(line, row)`` for every row of a CSV, JSON-lines or Parquet file, without loading it whole.

    Text is decoded by the declared ``encoding`` (the spec's ``[input] encoding``) or the detected one
    (:mod:`stream.io.text`); a byte it cannot decode stops the read with one line naming the file's line."""
    p = check_input(path, encoding)
    if p.suffix.lower() in BINARY_SUFFIXES:
        yield from _without_reject_columns(_parquet_rows(p, batch_rows), csv_cells=False)
        return
    codec = detect(p, encoding).codec
    jsonl = p.suffix in {".jsonl", ".ndjson"}
    rows = jsonl_rows(p, codec) if jsonl else _csv_rows(p, sep, codec, encoding)
    try:
        yield from _without_reject_columns(rows, csv_cells=not jsonl)
    except UnicodeDecodeError:
        raise decode_error(p, codec, declared=encoding is not None) from None


def _without_reject_columns(rows: Iterator[Row], csv_cells: bool) -> Iterator[Row]:
    for line, row in rows:
        if any(is_reject_column(k) for k in row):
            row = _from_rejects(row, csv_cells)
            if not row:  # the note line of a JSON-lines rejects file
                continue
        yield line, row


def chunks(rows: Iterator[Row], size: int) -> Iterator[list[Row]]:
    """Consecutive lists of at most ``size`` rows."""
    while chunk := list(itertools.islice(rows, size)):
        yield chunk
