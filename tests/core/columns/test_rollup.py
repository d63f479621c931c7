"""Rolling released labels up to a hierarchy level: one rule for every hierarchy kind."""

from __future__ import annotations

import pandas as pd
import pytest

from core.columns.rollup import grid_of, level_index, roll_up
from core.columns.typed import interpreters
from core.encoding import Schema
from core.schema import parse_spec

SPEC = {"qi": [
    {"name": "age", "type": "numeric", "hierarchy": {"widths": [5, 10], "domain": [0, 100], "integer": True}},
    {"name": "score", "type": "numeric", "hierarchy": {"edges": [[0, 1.5, 3, 6], [0, 3, 6]]}},
    {"name": "day", "type": "date"},
    {"name": "code", "type": "masked", "hierarchy": {"mask": 4}},
    {"name": "place", "type": "categorical", "hierarchy": {"level_names": ["region"],
                                                            "tree": {"North": ["a", "b"], "South": ["c"]}}},
    {"name": "auto", "type": "numeric"}]}


@pytest.fixture(scope="module")
def grids() -> dict[str, dict]:
    schema = Schema.from_spec(parse_spec(SPEC))
    return {i.name: grid_of(i) for i in interpreters(schema)}


def up(grid: dict, labels: list[str], level: int | str) -> list[str | None]:
    return list(roll_up(pd.Series(labels), grid, level_index(grid, level)))


def test_intervals_roll_up_nodes_at_or_below_and_count_coarser_ones(grids: dict[str, dict]) -> None:
    g = grids["age"]
    assert g["levels"] == ["value", "band of width 5", "band of width 10", "*"]
    labels = ["33", "[30, 34]", "[30, 39]", "[31, 33]", "[28, 31]", "*", "[0, 99]"]
    assert up(g, labels, "band of width 10") == ["[30, 39]", "[30, 39]", "[30, 39]", "[30, 39]", None, None, None]
    assert up(g, labels, 1) == ["[30, 34]", "[30, 34]", None, "[30, 34]", None, None, None]
    assert up(g, labels, 0) == ["33", None, None, None, None, None, None]
    assert up(g, labels, "*") == ["*"] * 7  # the top holds every row
    assert up(grids["score"], ["[0, 1.5)", "2", "[1.5, 3)", "7"], 2) == ["[0, 3)", "[0, 3)", "[0, 3)", None]


def test_dates_masks_and_trees(grids: dict[str, dict]) -> None:
    assert up(grids["day"], ["2024-03-05", "2024-03", "2024", "[2024-03-01, 2024-03-09]", "[2024-03-30, 2024-04-02]"],
              "month") == ["2024-03", "2024-03", None, "2024-03", None]
    assert up(grids["code"], ["8001", "800*", "80**", "****", "{8001,8002}"], 1) == ["800*", "800*", None, None, None]
    assert up(grids["place"], ["a", "North", "*", "{a,b}", "{a,c}", "zzz"], "region") == \
        ["North", "North", None, "North", None, None]
    assert up(grids["place"], ["a", "North", "{a,b}"], 0) == ["a", None, None]


def test_automatic_bands_resolve_only_with_the_data(grids: dict[str, dict]) -> None:
    assert grids["auto"]["widths"] is None
    assert up(grids["auto"], ["3", "[0, 9]"], 1) == [None, None]  # no fixed grid: best effort
    interp = interpreters(Schema.from_spec(parse_spec(SPEC)))[-1]
    g = grid_of(interp, pd.Series([0, 50, 160]))
    assert g["widths"] == [10.0, 20.0, 40.0, 80.0] and g["levels"][1] == "band of width 10"
    assert up(g, ["[10, 20)", "15"], 1) == ["[10, 20)", "[10, 20)"]


def test_level_names_and_numbers(grids: dict[str, dict]) -> None:
    assert level_index(grids["place"], "region") == level_index(grids["place"], 1) == 1
    with pytest.raises(ValueError, match="levels are: value, region, \\*"):
        level_index(grids["place"], "county")
    with pytest.raises(ValueError, match="no level 7"):
        level_index(grids["place"], 7)


def test_a_large_table_travels_without_its_rows() -> None:
    place = next(i for i in interpreters(Schema.from_spec(parse_spec(SPEC))) if i.name == "place")
    assert grid_of(place)["rows"] is not None and grid_of(place, max_rows=2)["rows"] is None
    with pytest.raises(ValueError, match="typed ancestor columns"):
        roll_up(pd.Series(["a"]), grid_of(place, max_rows=2), 1)
