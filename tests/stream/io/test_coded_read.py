"""A CSV is read in blocks, each block's cells factorized (stream.io.tables): the frame and its codes are
those of the whole file, whatever the block size."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from core.codes import Codes, carried
from stream.io import arrow_csv, tables


@pytest.mark.parametrize("block", [1, 7, 50, 10_000])
def test_blocks_give_the_whole_columns_and_their_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       block: int) -> None:
    rng = np.random.default_rng(block)
    path = tmp_path / "t.csv"
    rows = [[f"a{rng.integers(0, 5)}", f"id{i}", rng.choice(["", "x", "y"])] for i in range(120)]
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows([["a", "b", "c"], *rows])
    monkeypatch.setattr(tables, "_BLOCK", block)
    monkeypatch.setattr(arrow_csv, "coded_cells", lambda *a, **k: None)  # the reference reader, in blocks
    frame = tables.read_table(path)
    assert frame.to_numpy().tolist() == rows
    assert [frame.attrs["lines"][i] for i in range(len(frame))] == list(range(2, 122))
    for col in frame.columns:
        got, want = carried(frame, col), Codes.of(frame[col])
        assert got is not None
        assert np.array_equal(got.codes, want.codes) and list(got.uniques) == list(want.uniques)
