"""The smallest hierarchy node covering a group of values (core/hierarchies/nodes.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.hierarchies import DateHierarchy, IntervalHierarchy
from core.hierarchies.nodes import group_nodes, is_laminar, nested_group_labels, node_labels, row_nodes
from core.hierarchies.tree import tree_hierarchy

AGES = IntervalHierarchy("age", widths=(5, 10, 20), domain=(0, 100), integer=True)


def test_group_labels_are_the_lowest_covering_band() -> None:
    q = AGES.encode(pd.Series([31, 33, 31, 38, 41, 12, 12]))
    groups = np.array([0, 0, 1, 1, 2, 2, 3])
    labels, cost = nested_group_labels(q, groups)
    # {31, 33} in [30, 34]; {31, 38} in [30, 39]; {41, 12} cross the top band edge 40: *; {12} alone
    assert labels.tolist() == ["[30, 34]", "[30, 34]", "[30, 39]", "[30, 39]", "*", "*", "12"]
    assert np.allclose(cost, [0.05, 0.05, 0.1, 0.1, 1.0, 1.0, 0.0])


def test_row_nodes_cover_each_rows_matches() -> None:
    q = AGES.encode(pd.Series([31, 33, 58, 45]))
    level, code = row_nodes(q, np.array([[0, 1], [1, 2], [2, 3], [3, 3]]))
    assert node_labels(q, level, code).tolist() == ["[30, 34]", "*", "[40, 59]", "45"]


def test_dates_and_trees() -> None:
    days = DateHierarchy("day").encode(pd.Series(["2024-03-01", "2024-03-09", "2024-04-02", "2025-01-01"]))
    level, code = group_nodes(days, np.array([0, 0, 1, 1]))
    assert node_labels(days, level, code).tolist() == ["2024-03", "*"]
    level, code = group_nodes(days, np.array([0, 0, 0, 1]))
    assert node_labels(days, level, code).tolist() == ["2024", "2025-01-01"]
    colours = tree_hierarchy("c", {"Warm": ["red", "orange"], "Cool": ["blue"]})
    tree = colours.encode(pd.Series(["red", "orange", "blue"]))
    level, code = group_nodes(tree, np.array([0, 0, 1]))
    assert node_labels(tree, level, code).tolist() == ["Warm", "blue"]


def test_is_laminar() -> None:
    assert is_laminar([(0, 9), (0, 4), (5, 9), (5, 5), (20, 30), (0, 9)])
    assert not is_laminar([(0, 9), (5, 14)])
    assert not is_laminar([(0, 4), (4, 8)])  # closed ranges sharing an end overlap
