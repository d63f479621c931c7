"""Arrow's CSV reader is used only where it reads a file as the reference reader does (stream/io/arrow_csv.py):
on any text, ``read_table`` gives the same rows, lines, codes or error with it as without it."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.codes import carried
from stream.io import arrow_csv, tables

# the pieces CSV text is made of, the awkward ones included: quotes, spaces before a value, every line
# ending, blank lines, separators of both kinds, text beyond ASCII
PIECES = st.sampled_from(["a", "b", "7", " ", '"', ",", ";", "\n", "\r\n", "\r", "é", "x y", '""'])


def _read(path: Path, fast: bool, monkeypatch: pytest.MonkeyPatch) -> object:
    """What read_table gives: (columns, rows, lines, codes) or the error's type and text."""
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(arrow_csv, "coded_cells", lambda *a, **k: None)
        try:
            frame = tables.read_table(path)
        except Exception as exc:  # the two readers must fail alike
            return type(exc).__name__, str(exc)
    codes = []
    for col in frame.columns:
        got = carried(frame, col)
        assert got is not None
        codes.append((got.codes.tolist(), list(got.uniques)))
    return (list(frame.columns), frame.to_numpy().tolist(), tables.line_numbers(frame, range(len(frame))), codes)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header=st.sampled_from(["a,b,c\n", "a;b\n", "a\n", "a,b\r\n", '"a", b,c\n']),
       body=st.lists(PIECES, min_size=1, max_size=40))
def test_any_text_is_read_alike_with_and_without_arrow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        header: str, body: list[str]) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes((header + "".join(body)).encode())
    assert _read(path, True, monkeypatch) == _read(path, False, monkeypatch)


def test_a_plain_export_is_read_by_arrow_with_its_lines(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    path = tmp_path / "t.csv"
    rows = [[f"s{rng.integers(0, 9)}", f"id{i}", rng.choice(["", "x", "y z"]), "José"] for i in range(500)]
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows([["a", "b", "c", "d"], *rows])
    got = arrow_csv.coded_cells(path, ["a", "b", "c", "d"], ",", "utf-8", header_row=True)
    assert got is not None
    lines, codes = got
    assert lines.tolist() == list(range(2, 502))
    assert [c.uniques[c.codes].tolist() for c in codes] == [list(col) for col in zip(*rows, strict=True)]


@pytest.mark.parametrize("text", ["a,b\n1,2\n\n3,4\n",  # a blank line: the lines would shift
                                  'a,b\n"1\n2",3\n',  # a value over two lines
                                  "a,b\n 1,2\n",  # a space before a value (csv drops it)
                                  "a,b\n1,2,3\n",  # a long row (csv cuts it)
                                  "a,b\n1\n"])  # a short row (csv pads it)
def test_arrow_declines_what_it_would_read_otherwise(tmp_path: Path, text: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(text)
    assert arrow_csv.coded_cells(path, ["a", "b"], ",", "utf-8", header_row=True) is None


def test_a_value_past_the_csv_field_limit_is_left_to_the_reference_reader(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n" + "x" * (csv.field_size_limit() + 1) + ",1\n")
    assert arrow_csv.coded_cells(path, ["a", "b"], ",", "utf-8", header_row=True) is None


@pytest.mark.parametrize(("data", "lines"), [(b"", 0), (b"a", 1), (b"a\n", 1), (b"a\r\nb", 2), (b"a\rb\r", 2),
                                             (b"\n\n", 2), (b"a\r\n\r\n", 2)])
def test_physical_lines_are_counted_as_csv_counts_them(tmp_path: Path, data: bytes, lines: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(data)
    assert arrow_csv.physical_lines(path) == lines
    monkeypatch.setattr(arrow_csv, "_LINE_BLOCK", 1)  # a \r\n split between two blocks
    assert arrow_csv.physical_lines(path) == lines


CELL = st.lists(st.sampled_from(["a", "b", " ", '"', '""', "é", "x y", "7", ",", ";", "\n"]), max_size=4).map("".join)


@st.composite
def _tables(draw: st.DrawFn) -> str:
    """A header and rows of as many cells, some quoted: the files Arrow does read, and their near misses."""
    width, sep = draw(st.integers(1, 3)), draw(st.sampled_from([",", ";"]))

    def cell() -> str:
        text = draw(CELL)
        return '"' + text.replace('"', '""') + '"' if draw(st.booleans()) else text

    rows = [sep.join(f"h{j}" for j in range(width))]
    rows += [sep.join(cell() for _ in range(width)) for _ in range(draw(st.integers(1, 5)))]
    return draw(st.sampled_from(["\n", "\r\n"])).join(rows) + draw(st.sampled_from(["", "\n"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_tables())
def test_any_table_is_read_alike_with_and_without_arrow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         text: str) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(text.encode())
    assert _read(path, True, monkeypatch) == _read(path, False, monkeypatch)


def test_a_file_without_a_header_row_is_read_alike_from_line_one(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec's ``[input] columns`` names the columns of a file that has no header row."""
    path = tmp_path / "t.csv"
    path.write_text("1,a,x\n2,b,y\n3,a,z\n")
    names = ("n", "l", "t")
    got = arrow_csv.coded_cells(path, list(names), ",", "utf-8", header_row=False)
    assert got is not None and got[0].tolist() == [1, 2, 3]
    fast = tables.read_table(path, ",", names)
    monkeypatch.setattr(arrow_csv, "coded_cells", lambda *a, **k: None)
    slow = tables.read_table(path, ",", names)
    assert fast.equals(slow) and fast.to_numpy().tolist() == [["1", "a", "x"], ["2", "b", "y"], ["3", "a", "z"]]
    assert tables.line_numbers(fast, range(3)) == tables.line_numbers(slow, range(3)) == [1, 2, 3]


def test_one_thread_or_two_read_the_same_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrow parses blocks on two threads only when a core is spare: the rows and codes never depend on it."""
    from core import parallel

    rng = np.random.default_rng(5)
    path = tmp_path / "t.csv"
    with path.open("w", newline="") as fh:  # about 3 MB: several of Arrow's blocks
        csv.writer(fh).writerows([["a", "b"], *([f"s{rng.integers(0, 50)}", f"id{i}"] for i in range(150_000))])
    monkeypatch.setattr(parallel, "spare_core", lambda: True)
    got = []
    for count in (1, 2):
        monkeypatch.setattr(parallel, "threads", lambda count=count: count)
        read = arrow_csv.coded_cells(path, ["a", "b"], ",", "utf-8", header_row=True)
        assert read is not None
        got.append([(c.codes.tolist(), list(c.uniques)) for c in read[1]])
    assert got[0] == got[1]
