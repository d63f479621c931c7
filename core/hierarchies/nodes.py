"""The smallest hierarchy node covering a group of values: the labels of nested (laminar) releases.

A local-recoding engine that releases, for each class and QI, the lowest node of the QI's
hierarchy covering the class's values publishes labels that are nodes of one tree, so any two of
them are disjoint or one contains the other (numeric bands on the hierarchy's grid, dates on
day / month / year, categories on the taxonomy). The node's cost is the hierarchy's own (CG eq. 2-3,
ILS eq. 1-2 on the node instead of the values' hull).
"""

from __future__ import annotations

import numpy as np

from core.hierarchies.base import EncodedQI


def group_nodes(q: EncodedQI, groups: np.ndarray, leaves: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Level and code of the lowest node covering each group's leaves.

    ``groups`` holds a dense group id (0 .. G - 1) per row; ``leaves`` the rows' leaf codes (default
    ``q.codes``). Returns two arrays of length G: level and code at that level (groups with no row get
    the top)."""
    leaves = q.codes if leaves is None else leaves
    g = int(groups.max()) + 1 if len(groups) else 0
    level = np.full(g, q.height, dtype=np.int64)
    code = np.zeros(g, dtype=np.int64)
    todo = np.ones(g, dtype=bool)
    if len(groups):
        todo[np.bincount(groups, minlength=g) == 0] = False
    for lvl in range(q.height + 1):
        if not todo.any():
            break
        mapped = q.maps[lvl][leaves].astype(np.int64)
        lo = np.full(g, np.iinfo(np.int64).max)
        hi = np.full(g, -1, dtype=np.int64)
        np.minimum.at(lo, groups, mapped)
        np.maximum.at(hi, groups, mapped)
        here = todo & (lo == hi)
        level[here], code[here] = lvl, lo[here]
        todo &= ~here
    return level, code


def row_nodes(q: EncodedQI, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Level and code of the lowest node covering each row of ``members`` (n, r): row positions whose
    leaves one released row generalizes (a heterogeneous matching)."""
    leaves = q.codes[members]
    n = len(members)
    level = np.full(n, q.height, dtype=np.int64)
    code = np.zeros(n, dtype=np.int64)
    todo = np.ones(n, dtype=bool)
    for lvl in range(q.height + 1):
        if not todo.any():
            break
        mapped = q.maps[lvl][leaves]
        here = todo & (mapped == mapped[:, :1]).all(axis=1)
        level[here], code[here] = lvl, mapped[here, 0]
        todo &= ~here
    return level, code


def node_labels(q: EncodedQI, level: np.ndarray, code: np.ndarray) -> np.ndarray:
    """The hierarchy label of each (level, code) node (object array of ``str``)."""
    out = np.empty(len(level), dtype=object)
    for lvl in np.unique(level):
        at = level == lvl
        out[at] = q.labels[int(lvl)][code[at]]
    return out


def node_costs(q: EncodedQI, level: np.ndarray, code: np.ndarray) -> np.ndarray:
    """The hierarchy's information-loss cost of each (level, code) node, in [0, 1]."""
    out = np.zeros(len(level))
    for lvl in np.unique(level):
        at = level == lvl
        out[at] = q.cost[int(lvl)][code[at]]
    return out


def nested_group_labels(q: EncodedQI, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the label and the cost of the lowest node covering its group (``groups``: dense id per row)."""
    level, code = group_nodes(q, groups)
    return node_labels(q, level, code)[groups], node_costs(q, level, code)[groups]


def is_laminar(ranges: list[tuple[float, float]]) -> bool:
    """True if any two closed ranges are disjoint or one contains the other."""
    spans = sorted(set(ranges), key=lambda r: (r[0], -r[1]))
    open_: list[tuple[float, float]] = []  # a chain of ranges, each containing the next
    for lo, hi in spans:
        while open_ and open_[-1][1] < lo:
            open_.pop()
        if open_ and hi > open_[-1][1]:
            return False
        open_.append((lo, hi))
    return True
