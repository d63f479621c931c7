import numpy as np
import pandas as pd

from core.encoding import Schema, encode
from core.engines.registry import get_engine, make_params
from core.verify import verify_release


def test_optimal_on_adult_reference(adult_df: pd.DataFrame, adult_schema: Schema) -> None:
    batch = encode(adult_df, adult_schema)
    eng = get_engine("optimal")
    rel = eng.anonymize(batch, make_params(eng, {"k": 5, "max_suppression": 0.04}), np.random.default_rng(0))
    assert list(rel.diagnostics["levels"].values()) == [0, 3, 0, 1, 1, 1, 1, 2, 0]
    assert len(rel.suppressed) == 1178
    assert verify_release(adult_df, rel, adult_schema).ok
