"""A CSV without a header row, found before ``spec draft`` takes its first row for column names.

A first row is data, not a header, when either
- at least half of its text cells are also values of their own column in the rows below (a header
  names a column, it is never one of its values: UCI Adult's ``State-gov`` heads the workclass column
  it also fills, and so do 8 of its 9 other text cells), or
- every cell of it is a number, as is every cell below (a file of numbers only).

A header of year columns (``region,2019,2020``) stays a header (``region`` is text and not a value
below), and so does a header one of whose names happens to be a value (``F`` over F/M). The draft then
names the columns ``column_1`` ... and writes them in the spec's ``[input] columns``, with a note
telling how to name them (``spec draft FILE --columns a,b,...``).
"""

from __future__ import annotations

import csv
from itertools import islice
from pathlib import Path

from stream.io.text import BINARY_SUFFIXES, detect

SAMPLE_ROWS = 200  # rows below the first one that are compared with it
JSON_SUFFIXES = {".jsonl", ".ndjson", ".json"}


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() != ""


def _raw(p: Path, encoding: str | None) -> list[list[str]]:
    """The first row and up to ``SAMPLE_ROWS`` rows below as written (read raw: a first row of data may
    repeat a cell, which a header may not)."""
    with p.open(encoding=detect(p, encoding).codec, newline="") as fh:
        first = fh.readline()
        sep = ";" if first.count(";") > first.count(",") else ","
        return [r for r in islice(csv.reader([first, *islice(fh, SAMPLE_ROWS * 2)], delimiter=sep,
                                             skipinitialspace=True), SAMPLE_ROWS + 1) if r]


def _head(p: Path, encoding: str | None) -> list[list[str]]:
    """:func:`_raw`, cells trimmed, each row padded or cut to the first row's width."""
    rows = _raw(p, encoding)
    width = len(rows[0]) if rows else 0
    return [[c.strip() for c in (r + [""] * width)[:width]] for r in rows]


def title_line(path: str | Path, encoding: str | None = None) -> str | None:
    """One line saying the first row is narrower than the rows below (a title line above the table, as
    UCI's adult.test opens with ``|1x3 Cross validator``), or None. Such a first row is no header of them:
    the reader would drop every cell past its width."""
    p = Path(path)
    if p.suffix.lower() in BINARY_SUFFIXES | JSON_SUFFIXES:
        return None
    rows = _raw(p, encoding)
    below = [len(r) for r in rows[1:]]
    wider = sum(1 for n in below if n > len(rows[0])) if below else 0
    if not below or 10 * wider < 9 * len(below):
        return None
    most = max(set(below), key=below.count)
    return (f"{p.name}: line 1 has {len(rows[0])} cell(s) and the rows below have {most}: a title line above "
            "the table, not its header; remove it (and add a header row, or name the columns with --columns)")


def first_row_is_data(path: str | Path, encoding: str | None = None) -> str | None:
    """Why the first row of a CSV reads as data (one phrase), or None when it reads as a header."""
    p = Path(path)
    if p.suffix.lower() in BINARY_SUFFIXES | JSON_SUFFIXES:
        return None
    rows = _head(p, encoding)
    if len(rows) < 2:
        return None
    names, below = rows[0], rows[1:]
    columns = list(zip(*below, strict=True))
    text = [i for i, n in enumerate(names) if n and not _number(n)]
    echoed = [names[i] for i in text if names[i] in columns[i]]
    if echoed and 2 * len(echoed) >= len(text):
        return (f"{len(echoed)} of its first row's {len(text)} text cells are also values of their own column "
                f"below (such as {echoed[0]!r}), as no column name is")
    if not text and all(_number(v) or v == "" for col in columns for v in col):
        return "its first row is numbers, like every row below"
    return None


def generic_names(path: str | Path, encoding: str | None = None) -> tuple[str, ...]:
    """``column_1`` ... ``column_N``, one per cell of the first row."""
    rows = _head(Path(path), encoding)
    return tuple(f"column_{i}" for i in range(1, len(rows[0]) + 1))
