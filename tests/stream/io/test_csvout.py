"""write_csv formats each distinct row once and writes the bytes pandas' to_csv writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from stream.io.csvout import row_ids, write_csv
from stream.io.csvsafe import neutralize_frame


def _table(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame({"label": rng.choice(["[20, 30)", "=SUM(A1)", "*", "a,b"], n),
                         "lo": rng.choice([20.0, np.nan], n), "n": rng.integers(0, 3, n),
                         "flag": pd.array(rng.choice([True, False], n), dtype="boolean")})


def test_same_bytes_as_pandas(tmp_path: Path) -> None:
    frame = _table()
    prepare = lambda rows: neutralize_frame(rows, ["lo"])
    write_csv(frame, tmp_path / "fast.csv", prepare=prepare)
    prepare(frame).to_csv(tmp_path / "pandas.csv", index=False)
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "pandas.csv").read_bytes()
    assert "'=SUM(A1)" in (tmp_path / "fast.csv").read_text()


def test_line_breaks_and_distinct_rows_fall_back(tmp_path: Path) -> None:
    frame = _table()
    frame.loc[3, "label"] = "two\nlines"
    write_csv(frame, tmp_path / "a.csv")
    frame.to_csv(tmp_path / "b.csv", index=False)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    unique = pd.DataFrame({"id": range(50)})
    write_csv(unique, tmp_path / "c.csv")
    assert (tmp_path / "c.csv").read_text() == unique.to_csv(index=False)


def test_row_ids_equal_rows_equal_ids() -> None:
    frame = pd.DataFrame({"a": ["x", "x", None, None, "y"], "b": [1, 1, 2, 2, 1]})
    assert row_ids(frame).tolist() == [0, 0, 1, 1, 2]


def test_mostly_distinct_rows_typed_columns(tmp_path: Path) -> None:
    n = 300
    frame = pd.DataFrame({"id": range(n), "lo": pd.array([1.5, None, 1e-7] * 100, dtype="Float64"),
                          "n": pd.array([1, None, -3] * 100, dtype="Int64"),
                          "s": pd.array(["", None, 'q"t'] * 100, dtype="string"),
                          "b": pd.array([True, None, False] * 100, dtype="boolean"), "f": [0.1 * i for i in range(n)]})
    order = np.random.default_rng(0).permutation(n)
    write_csv(frame, tmp_path / "a.csv", order=order)
    frame.iloc[order].to_csv(tmp_path / "b.csv", index=False)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_mixed_object_values_keep_their_text(tmp_path: Path) -> None:
    frame = pd.DataFrame({"m": pd.Series([1, 1.0, True, None, "x"] * 4, dtype=object), "k": [0] * 20})
    write_csv(frame, tmp_path / "a.csv")
    assert (tmp_path / "a.csv").read_text() == frame.to_csv(index=False)
    frame = pd.DataFrame({"m": pd.Series([1, 1.0, True, "x"], dtype=object), "id": range(4)})
    write_csv(frame, tmp_path / "b.csv")
    assert (tmp_path / "b.csv").read_text() == frame.to_csv(index=False)
