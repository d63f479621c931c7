"""Mondrian's cuts for ``bands = "nested"``: every cut falls on a boundary between hierarchy nodes.

A partition's label per QI will be the lowest node of the QI's hierarchy covering its values (level
L). Cutting at the median of the values (free ranges) usually leaves both halves under the same
node, or straddling a band edge that pushes a neighbour to a coarser node. Instead the partition
is cut between the children (level L - 1) of that node, at the child boundary nearest the median
that keeps both halves valid, on the QI whose node costs most first. A half that holds one child
drops to that child's node or below, so every cut lowers the released loss where it can.

**Peeling** (issue 39). When no cut between children is valid (the usual case: a rare tail, such as
the few people over 80 among reports of 18-35 year olds, holds fewer than k rows of the last
child), the partition keeps the node (often ``*``) for every row however it is cut later, and cuts
on other QIs only spread the rare rows over many classes that all inherit the node. Before moving to
the next QI, the cut then falls on a finer boundary of the same hierarchy (any node edge down to a
single value) inside the first or the last child: the peeled side lies within that child and drops
to its node or below; the other side keeps the node but is as small as a valid cut allows (the rare
rows and the fewest neighbours), so the coarse label is paid by about k rows instead of every class
the rare rows end up in. Any cut only lowers or keeps every label (a subset's covering node is never
coarser), so peeling never adds loss. Measured in ``bench/nesting_cost.py`` and docs/engines/mondrian.md.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from core.encoding import EncodedBatch

PEEL_TRIES = 48  # validity checks per peel at most (each is one pass over the partition)


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
                 valid: Callable[[np.ndarray], bool], stack: list[np.ndarray], k_min: int = 1,
                 peeled: list[int] | None = None) -> bool:
    """Cut ``rows`` between children of a QI's lowest covering node, on the QI whose node costs most
    first; a QI with no valid child cut offers a peel (module docstring) instead, taken when it lowers
    the weighted loss more than the next valid child cut would. False if no valid cut exists.
    ``peeled`` counts the peels taken per QI."""
    options = []
    for a, q in enumerate(batch.qis):
        leaves = q.codes[rows]
        lv = q.lca_level(leaves)
        if lv > 0:
            options.append((-float(q.cost[lv][q.maps[lv][leaves[0]]]), a, lv))
    peel: tuple[float, int, tuple[np.ndarray, np.ndarray]] | None = None  # (gain, QI, halves)
    for neg_cost, a, lv in sorted(options):
        q = batch.qis[a]
        key = ranks[a][lv - 1][q.maps[lv - 1][q.codes[rows]]]
        cut = _child_cut(rows, key, valid)
        if cut is not None:
            if peel is None or _gain(batch, a, -neg_cost, cut) >= peel[0]:
                stack.extend([cut[1], cut[0]])
                return True
            break
        if peel is not None and float(batch.weights[a]) * -neg_cost * len(rows) <= peel[0]:
            continue  # a peel here cannot gain more than the one in hand
        halves = _peel(rows, ranks[a][0][q.codes[rows]], key, valid, k_min)
        if halves is not None and (peel is None or _gain(batch, a, -neg_cost, halves) > peel[0]):
            peel = (_gain(batch, a, -neg_cost, halves), a, halves)
    if peel is None:
        return False
    stack.extend([peel[2][1], peel[2][0]])
    if peeled is not None:
        peeled[peel[1]] += 1
    return True


def _gain(batch: EncodedBatch, a: int, cost: float, halves: tuple[np.ndarray, np.ndarray]) -> float:
    """Weighted loss of QI ``a`` over both halves before the cut (node ``cost``) minus after."""
    q = batch.qis[a]
    after = 0.0
    for h in halves:
        lv = q.lca_level(q.codes[h])
        after += len(h) * float(q.cost[lv][q.maps[lv][q.codes[h[0]]]])
    return float(batch.weights[a]) * (cost * sum(len(h) for h in halves) - after)


def _child_cut(rows: np.ndarray, key: np.ndarray, valid: Callable[[np.ndarray], bool]
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """The valid cut between children (``key``: the child's rank per row) nearest the median."""
    order = np.argsort(key, kind="stable")
    cuts = np.flatnonzero(np.diff(key[order])) + 1  # where the next child starts
    for cut in cuts[np.argsort(np.abs(cuts - len(rows) / 2), kind="stable")]:
        left, right = rows[order[:cut]], rows[order[cut:]]
        if valid(left) and valid(right):
            return left, right
    return None


def _peel(rows: np.ndarray, leaf: np.ndarray, child: np.ndarray, valid: Callable[[np.ndarray], bool],
          k_min: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Cut inside the first or last child at the value boundary that leaves the straddling side
    smallest and both sides valid (``leaf``: leaf rank per row; ``child``: its child's rank)."""
    n = len(rows)
    order = np.argsort(leaf, kind="stable")  # leaf order refines child order: siblings are adjacent
    cs = child[order]
    first = int(np.searchsorted(cs, cs[0], side="right"))  # rows in the first child
    last = n - int(np.searchsorted(cs, cs[-1], side="left"))  # rows in the last child
    pos = np.flatnonzero(np.diff(leaf[order])) + 1  # value boundaries (leaves are the finest nodes)
    left_peel = pos[(pos < first) & (pos >= k_min) & (n - pos >= k_min)]  # peel [:p], straddle [p:]
    right_peel = pos[(pos > n - last) & (n - pos >= k_min) & (pos >= k_min)]  # peel [p:], straddle [:p]
    cand = np.concatenate([left_peel, right_peel])
    straddle = np.concatenate([n - left_peel, right_peel])
    for i in np.argsort(straddle, kind="stable")[:PEEL_TRIES]:
        p = int(cand[i])
        lo, hi = rows[order[:p]], rows[order[p:]]
        if valid(lo) and valid(hi):
            return lo, hi
    return None
