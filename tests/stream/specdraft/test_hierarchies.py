"""Hierarchies that respect what codes mean: precincts and state codes are not postcodes."""

from __future__ import annotations

import pandas as pd

from stream.specdraft.draft import make_draft
from stream.specdraft.geo import state_rows


def _qi(frame: pd.DataFrame, name: str) -> dict:
    draft = make_draft(frame, "x")
    col = next(c for c in draft.role("qi") if c.name == name)
    assert col.qi is not None
    return col.qi


def _frame(**cols: list[str]) -> pd.DataFrame:
    """120 rows: each column's values repeated, beside an age column."""
    n = 120
    return pd.DataFrame({k: (v * (n // len(v) + 1))[:n] for k, v in cols.items()}
                        | {"age": [str(20 + (i * 7) % 53) for i in range(n)]})


def test_precinct_and_beat_numbers_are_grouped_by_number_never_masked() -> None:
    precincts = [str(p) for p in range(100, 116)]
    for name in ("ARREST_PRECINCT", "beat", "district_code"):
        qi = _qi(_frame(**{name: precincts}), name)
        assert qi["type"] == "categorical" and "mask" not in qi["hierarchy"]
        rows = qi["hierarchy"]["rows"]
        assert ["100", "100-103", "*"] in rows and ["115", "112-115", "*"] in rows


def test_a_zip_code_of_one_length_is_masked_and_one_of_mixed_lengths_is_not() -> None:
    assert _qi(_frame(zip=["10001", "10002", "11201", "11375"]), "zip") == {"type": "masked",
                                                                          "hierarchy": {"mask": 5}}
    mixed = _qi(_frame(zip=["2134", "10001", "501", "11375", "90210", "7030", "60601", "33101"]), "zip")
    assert mixed["type"] == "categorical"  # leading zeros lost: masking digits would mix regions


def test_state_fips_codes_nest_in_census_divisions_and_regions() -> None:
    qi = _qi(_frame(STATEFIP=["1", "6", "36", "48", "17", "53"]), "STATEFIP")
    rows = {r[0]: r[1:] for r in qi["hierarchy"]["rows"]}
    assert rows["36"] == ["Middle Atlantic", "Northeast", "*"]
    assert rows["6"] == rows["53"] == ["Pacific", "West", "*"]
    assert rows["1"] == ["East South Central", "South", "*"]


def test_state_rows_read_fips_postal_codes_and_names_and_refuse_anything_else() -> None:
    assert state_rows(["NY", "CA", "TX"]) is not None
    assert state_rows(["New York", "Texas", "Ohio"]) is not None
    rows = state_rows(["06", "36", "48"])
    assert rows is not None and sorted(rows) == [["06", "Pacific", "West", "*"],
                                                 ["36", "Middle Atlantic", "Northeast", "*"],
                                                 ["48", "West South Central", "South", "*"]]
    assert state_rows(["NY", "CA", "Ontario"]) is None
    assert state_rows(["1", "2", "99"]) is None
