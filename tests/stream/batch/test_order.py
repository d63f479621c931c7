"""The batch publication order computed over distinct rows is the stream's publish_order, row for row."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stream.batch.order import publication_positions
from stream.worker.sampling import publish_order


def _table(n: int = 600) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.choice(np.array(["x", "=y", "-1", None], dtype=object), n),
                          "b": rng.integers(0, 4, n),
                          "c": rng.choice([1.5, np.nan, 2.0], n),
                          "d": pd.array(rng.choice([True, False], n), dtype="boolean"),
                          "e": rng.choice(["1", "é", "1é"], n), "f": rng.choice([1, 10, 2, -1], n)})
    frame.loc[5, "d"] = pd.NA
    return frame


@pytest.mark.parametrize("mixed", [False, True])
def test_positions_match_publish_order(mixed: bool) -> None:
    frame = _table()
    if mixed:  # an object column of mixed values: 1, 1.0 and True hash alike but encode differently
        frame["m"] = pd.Series([1, 1.0, True, "x"] * (len(frame) // 4), dtype=object)
    values = frame.astype(object).where(frame.notna(), None).values.tolist()
    for seed in (0, 7, 2**62 + 5):
        expected = pd.DataFrame(publish_order(values, seed), columns=frame.columns)
        got = frame.iloc[publication_positions(frame, seed)].reset_index(drop=True)
        assert got.to_csv(index=False) == expected.to_csv(index=False)


@pytest.mark.parametrize("n", [0, 1, 2, 50])
def test_positions_match_publish_order_when_an_early_column_tells_rows_apart(n: int) -> None:
    """Ranking stops at the first column that tells every row apart; later columns must not matter."""
    frame = pd.DataFrame({"id": [f"r{i:03d}" for i in range(n)][::-1], "x": ["b", "a"] * (n // 2) + ["c"] * (n % 2)})
    values = frame.astype(object).values.tolist()
    expected = pd.DataFrame(publish_order(values, 11), columns=frame.columns)
    got = frame.iloc[publication_positions(frame, 11)].reset_index(drop=True)
    assert got.to_csv(index=False) == expected.to_csv(index=False)
