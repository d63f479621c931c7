"""A CSV's cells by Arrow's multi-threaded reader, used only where it gives what the reference reader gives.

:func:`stream.io.rows.csv_cells` (Python's ``csv`` module, ``skipinitialspace``) is the one definition
of how anonstream reads a CSV; ``push`` streams files with it. It parses about 150,000 rows a second in
one thread. Arrow's CSV reader parses the same text in native code (on two threads when the process
may use two cores and one is spare, as core/parallel.py decides for core's own work; the cells are the
same on one), and agrees with it cell for cell except where:

* a cell starts with a space (``csv`` drops leading spaces, Arrow keeps them);
* a row has more or fewer cells than the header (``csv_cells`` cuts or pads it, Arrow refuses it);
* a line is blank, or a quoted value spans lines (the file line of each row is then not its position
  plus the header's line; ``csv`` skips a blank line and Arrow may too, so the lines would differ);
* the text is not UTF-8 (or starts with a byte-order mark), holds a NUL character, or a cell longer than
  ``csv``'s field size limit (which ``csv`` refuses).

:func:`coded_cells` reads with Arrow, checks each of those after the read (on each column's distinct
values and on the file's count of physical lines, so the checks cost little) and returns None where any
fails: the caller then reads with ``csv_cells``. A test compares the two on generated files
(tests/stream/io/test_arrow_csv.py). The codes are Arrow's dictionary encoding, by first appearance:
those ``pd.factorize`` gives the column (:class:`core.codes.Codes`).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from core.codes import Codes

_LINE_BLOCK = 1 << 24  # bytes read at a time when counting lines


def coded_cells(path: Path, header: list[str], sep: str, codec: str,
                header_row: bool) -> tuple[np.ndarray, list[Codes]] | None:
    """(file line of each row, :class:`Codes` of each column) of the CSV at ``path`` as
    :func:`stream.io.rows.csv_cells` reads it (``header``: its names; ``header_row``: the file's first
    line holds them; ``codec``: :func:`stream.io.text.detect`'s, whose "utf-8" has no byte-order mark),
    or None if Arrow's reading could differ from it for this file (see the module)."""
    if codec != "utf-8" or len(sep) != 1 or sep in " \"\r\n":
        return None
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    from core import parallel

    both = parallel.threads() > 1 and parallel.spare_core()  # as core's own work: a second core only if spare
    try:
        table = pcsv.read_csv(
            path, read_options=pcsv.ReadOptions(column_names=header, skip_rows=int(header_row), use_threads=both),
            parse_options=pcsv.ParseOptions(delimiter=sep, newlines_in_values=True),
            convert_options=pcsv.ConvertOptions(column_types=dict.fromkeys(header, pa.string())))
    except (pa.ArrowException, ValueError):  # a short or long row, invalid UTF-8, a too large value
        return None
    rows = table.num_rows
    if rows == 0 or physical_lines(path) != rows + int(header_row):
        return None
    out = []
    for name in header:
        try:
            encoded = table.column(name).combine_chunks().dictionary_encode()
        except pa.ArrowException:  # e.g. a column past 2 GiB of text
            return None
        table = table.drop_columns([name])  # each column's text is freed once encoded
        distinct = encoded.dictionary
        if (pc.any(pc.starts_with(distinct, " ")).as_py() or pc.any(pc.match_substring(distinct, "\x00")).as_py()
                or (pc.max(pc.utf8_length(distinct)).as_py() or 0) >= csv.field_size_limit()):
            return None
        out.append(Codes(encoded.indices.to_numpy().astype(np.int32, copy=False),
                         distinct.to_numpy(zero_copy_only=False).astype(object, copy=False)))
    del table
    pa.default_memory_pool().release_unused()  # the text's buffers go back to the system, not kept for later
    first = 2 if header_row else 1
    return np.arange(first, first + rows, dtype=np.int64), out


def physical_lines(path: Path) -> int:
    """The lines of a text file as Python's ``csv`` module counts them (``\\n``, ``\\r\\n`` and ``\\r``
    each end one; a last line without an ending counts)."""
    lines, last = 0, b""
    with path.open("rb") as fh:
        while block := fh.read(_LINE_BLOCK):
            lines += block.count(b"\n") + block.count(b"\r") - block.count(b"\r\n")
            if last == b"\r" and block[:1] == b"\n":  # a \r\n split across two blocks
                lines -= 1
            last = block[-1:]
    return lines + (1 if last not in (b"", b"\n", b"\r") else 0)

