"""The one reader of a station's file: row by row, in bounded memory, with the line each row starts on.

Batch and stream read a file through :func:`iter_rows` alone: ``push`` sends its rows in chunks
(memory depends on the chunk size, never on the file size) and :func:`stream.io.tables.read_table`
(``anonymize``, ``risk``, ``spec check`` ...) makes its DataFrame of the very same rows, so a file can
never be read two ways. The rules, whatever the format:

- the header is read once (:func:`csv_header`, or the spec's ``[input] columns`` for a file without
  one); a column named twice (or a JSON object with a key twice, a Parquet file with two columns of
  one name) is refused in one line naming the column and both positions (reason ``duplicate-column``),
  never read as the first or the last of them;
- the text is decoded as :mod:`stream.io.text` decides (BOM, UTF-8, detected code page or declared);
- a quoted cell may hold line breaks; a row's line is the one it starts on, as an editor shows it (the
  header is line 1 of a CSV; JSON lines and Parquet rows are numbered from 1);
- a short CSV row's missing cells are empty; cells past the header are dropped; blank lines are skipped;
- values are strings as written (CSV) or the JSON / Parquet values; the columns a rejects file adds
  (``reject_*``) are dropped, so a fixed rejects file reads as the export it came from.
"""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import InputDataError
from stream.io.text import BINARY_SUFFIXES, check_input, decode_error, detect

if TYPE_CHECKING:
    from core.schema import InputFormat

# Columns a rejects file adds in front of the original row (after its note column, whose name starts
# with reject_note); push ignores them when a fixed rejects file is pushed again (stream/io/rejects.py).
JSON_SUFFIXES = frozenset({".jsonl", ".ndjson"})
REJECT_COLUMNS = ("reject_line", "reject_reason", "reject_message", "reject_hint")
Row = tuple[int, dict[str, Any]]


def is_reject_column(name: str) -> bool:
    return name in REJECT_COLUMNS or name.startswith("reject_note")


def _from_rejects(row: dict[str, Any], csv_cells: bool) -> dict[str, Any]:
    """A row of a rejects file without its reject_ columns; CSV cells lose the quote that kept a spreadsheet
    from running them as formulas (:func:`stream.io.csvsafe.neutralize`)."""
    from stream.io.csvsafe import unneutralize

    return {k: unneutralize(v) if csv_cells else v for k, v in row.items() if not is_reject_column(k)}


def check_header(names: list[str], where: object, item: str = "column", place: str = "the header") -> list[str]:
    """``names`` if none is given twice; else one line naming it and both its positions (from 1)."""
    first: dict[str, int] = {}
    for i, name in enumerate(names, start=1):
        if name in first:
            raise InputDataError(f"{where}: {item} '{name}' appears twice in {place}, as {item} {first[name]} and "
                                 f"{item} {i}; rename or remove one (a file is never read as one or the other)",
                                 reason="duplicate-column")
        first[name] = i
    return names


def csv_header(path: str | Path, sep: str | None = None, encoding: str | None = None,
               columns: tuple[str, ...] | None = None) -> tuple[list[str], str]:
    """The header row and separator of a CSV (separator sniffed: ``,`` or ``;``), decoded by the declared
    ``encoding`` (the spec's ``[input] encoding``), else the detected one (:func:`stream.io.text.detect`);
    with ``columns`` (a file without a header row) those names. A name given twice is refused."""
    codec = detect(path, encoding).codec
    try:
        with Path(path).open(encoding=codec, newline="") as fh:
            head = fh.readline()
    except UnicodeDecodeError:
        raise decode_error(path, codec, declared=encoding is not None) from None
    sep = sep or (";" if head.count(";") > head.count(",") else ",")
    names = list(columns) if columns else next(csv.reader([head], delimiter=sep, skipinitialspace=True), [])
    return check_header(names, path), sep


def csv_cells(path: str | Path, sep: str | None = None, encoding: str | None = None,
              columns: tuple[str, ...] | None = None) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """The header (:func:`csv_header`) and ``(line, cells)`` of each row of a CSV: as many cells as the
    header has names (a short row's missing cells empty, cells past the header dropped), blank lines
    skipped. A byte the encoding cannot decode raises UnicodeDecodeError from the iterator."""
    p = Path(path)
    header, sep = csv_header(p, sep, encoding, columns)
    width = len(header)

    def cells() -> Iterator[tuple[int, list[str]]]:
        with p.open(encoding=detect(p, encoding).codec, newline="") as fh:
            reader = csv.reader(fh, delimiter=sep, skipinitialspace=True)
            if not columns:
                next(reader, None)
            start = reader.line_num + 1
            for row in reader:
                if len(row) == width:
                    yield start, row
                elif row:
                    yield start, row[:width] if len(row) > width else row + [""] * (width - len(row))
                start = reader.line_num + 1

    return header, cells()


def _csv_rows(p: Path, sep: str | None, declared: str | None, columns: tuple[str, ...] | None) -> Iterator[Row]:
    header, cells = csv_cells(p, sep, declared, columns)
    for line, row in cells:
        yield line, dict(zip(header, row))


class _RepeatedKey(Exception):
    def __init__(self, keys: list[str]) -> None:
        self.keys = keys


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different (json.loads would keep the last of a repeated key)."""
    obj = dict(pairs)
    if len(obj) < len(pairs):
        raise _RepeatedKey([k for k, _v in pairs])
    return obj


def jsonl_rows(p: Path, codec: str = "utf-8") -> Iterator[Row]:
    """(line number, object) of each non-blank line; a line that is not a JSON object, or an object
    with a key twice, stops the read."""
    with p.open(encoding=codec) as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line, object_pairs_hook=_object)
            except _RepeatedKey as rep:
                check_header(rep.keys, f"{p}, line {n}", "key", "one object")
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
    source = pq.ParquetFile(p)
    check_header(list(source.schema_arrow.names), p)
    for batch in source.iter_batches(batch_size=batch_rows):
        for row in batch.to_pylist():
            n += 1
            yield n, row


def iter_rows(path: str | Path, sep: str | None = None, batch_rows: int = 10_000,
              encoding: str | None = None, columns: tuple[str, ...] | None = None) -> Iterator[Row]:
    """``(line, row)`` for every row of a CSV, JSON-lines or Parquet file, without loading it whole.

    Text is decoded by the declared ``encoding`` (the spec's ``[input] encoding``) or the detected one
    (:mod:`stream.io.text`); a byte it cannot decode stops the read with one line naming the file's line.
    ``sep`` and ``columns`` are the spec's ``[input] separator`` and ``columns`` (CSV only)."""
    p = check_input(path, encoding)
    if p.suffix.lower() in BINARY_SUFFIXES:
        yield from _without_reject_columns(_parquet_rows(p, batch_rows), csv_cells=False)
        return
    codec = detect(p, encoding).codec
    jsonl = p.suffix.lower() in JSON_SUFFIXES
    rows = jsonl_rows(p, codec) if jsonl else _csv_rows(p, sep, encoding, columns)
    try:
        yield from _without_reject_columns(rows, csv_cells=not jsonl)
    except UnicodeDecodeError:
        raise decode_error(p, codec, declared=encoding is not None) from None


def rows_for_spec(path: str | Path, fmt: InputFormat, batch_rows: int = 10_000) -> Iterator[Row]:
    """:func:`iter_rows` as a spec's ``[input]`` section says (separator, header-less columns, encoding):
    the one call by which ``anonymize`` and ``push`` read a station's file."""
    return iter_rows(path, fmt.separator, batch_rows, fmt.encoding, fmt.columns)


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
