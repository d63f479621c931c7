"""Mondrian's cuts for ``bands = "nested"``: every cut falls on a boundary between hierarchy nodes.

A partition's label per QI will be the lowest node of the QI's hierarchy covering its values (level
L). Cutting at the median of the values (free ranges) usually leaves both halves under the same
node, or straddling a band edge that pushes a neighbour to a coarser node. Instead the partition
is cut between the children (level L - 1) of that node, at the child boundary nearest the median
that keeps both halves valid, on the QI whose node costs most first. A half that holds one child
drops to that child's node or below, so every cut lowers the released loss where it can.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from core.encoding import EncodedBatch


def node_ranks(batch: EncodedBatch, leaf_ranks: list[np.ndarray]) -> list[list[np.ndarray]]:
    """Per QI and level, the rank of each node: the smallest rank of its leaves (siblings are adjacent)."""
    out = []
    for q, rank in zip(batch.qis, leaf_ranks, strict=True):
        per_level = []
        for lvl in range(q.height + 1):
            r = np.full(q.n_codes(lvl), np.iinfo(np.int64).max, dtype=np.int64)
            np.minimum.at(r, q.maps[lvl], rank)
            per_level.append(r)
        out.append(per_level)
    return out


def nested_split(rows: np.ndarray, batch: EncodedBatch, ranks: list[list[np.ndarray]],
                 valid: Callable[[np.ndarray], bool], stack: list[np.ndarray]) -> bool:
    """Cut ``rows`` between children of a QI's lowest covering node; False if no valid cut exists."""
    options = []
    for a, q in enumerate(batch.qis):
        leaves = q.codes[rows]
        lv = q.lca_level(leaves)
        if lv > 0:
            options.append((-float(q.cost[lv][q.maps[lv][leaves[0]]]), a, lv))
    half = len(rows) / 2
    for _, a, lv in sorted(options):
        q = batch.qis[a]
        key = ranks[a][lv - 1][q.maps[lv - 1][q.codes[rows]]]
        order = np.argsort(key, kind="stable")
        cuts = np.flatnonzero(np.diff(key[order])) + 1  # where the next child starts
        for cut in cuts[np.argsort(np.abs(cuts - half), kind="stable")]:
            left, right = rows[order[:cut]], rows[order[cut:]]
            if valid(left) and valid(right):
                stack.extend([right, left])
                return True
    return False
