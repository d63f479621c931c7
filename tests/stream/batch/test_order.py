"""The batch publication order computed over distinct rows is the stream's publish_order, row for row."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stream.batch.order import publication_positions
from stream.worker.sampling import publish_order


def _table(n: int = 600) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.choice(["x", "=y", "-1", None], n), "b": rng.integers(0, 4, n),
                          "c": rng.choice([1.5, np.nan, 2.0], n),
                          "d": pd.array(rng.choice([True, False], n), dtype="boolean"),
                          "e": rng.choice(["1", "é"], n)})
    frame.loc[5, "d"] = pd.NA
    return frame


def test_positions_match_publish_order() -> None:
    frame = _table()
    values = frame.astype(object).where(frame.notna(), None).values.tolist()
    for seed in (0, 7, 2**62 + 5):
        expected = pd.DataFrame(publish_order(values, seed), columns=frame.columns)
        got = frame.iloc[publication_positions(frame, seed)].reset_index(drop=True)
        assert got.to_csv(index=False) == expected.to_csv(index=False)
