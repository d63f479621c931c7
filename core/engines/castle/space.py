"""The generalisation space CASTLE clusters live in: every QI's hierarchy as padded numpy tables.

A tuple is a vector of leaf codes (one per QI, the codes of :mod:`core.encoding`). A cluster is, per QI,
``(lo, hi, level)``: for an ordered QI (numbers, dates; leaf codes sorted by value) the leaves at the
ends of its interval, for a categorical QI a representative leaf (``lo == hi``); ``level`` is the level
of the smallest hierarchy node covering the cluster, whose code is ``maps[level][lo]``. Released labels
are these nodes, so they nest like every other engine's (:mod:`core.hierarchies.nodes`).

Information loss of a cluster (what CASTLE's enlargement is measured in): the weighted mean over QIs of
the node's hierarchy cost (CG eq. 2-3, the project's loss metric per row), plus, for ordered QIs, a
tie-breaking ``HULL_EPS`` times the interval's normalised width (the paper's numeric loss), so that among
clusters under the same band the one with the nearest values wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from core.encoding import EncodedBatch

HULL_EPS = 1e-3
"""Weight of the paper's interval width next to the released node's cost (a tie-breaker)."""


@dataclass(frozen=True, eq=False)
class Space:
    """Padded hierarchy tables of ``d`` QIs.

    ``maps[a, l, leaf]``: code at level ``l`` of QI ``a``'s leaf (levels above a QI's height repeat its
    top, code 0); ``cost[a, l, code]``: the node's loss in [0, 1]; ``ordered[a]``: leaf codes follow
    values; ``vals[a, leaf]``: the leaf's value over the domain span (0 for categorical QIs);
    ``weights``: QI weights summing to 1; ``heights[a]``: the QI's top level.
    """

    maps: np.ndarray
    cost: np.ndarray
    ordered: np.ndarray
    vals: np.ndarray
    weights: np.ndarray
    heights: np.ndarray
    labels: tuple[tuple[np.ndarray, ...], ...]

    @property
    def d(self) -> int:
        return int(self.maps.shape[0])

    @cached_property
    def leafcost(self) -> np.ndarray:
        """``leafcost[a, l, leaf]``: the cost of the level-``l`` node above ``leaf`` (one look-up, not two)."""
        return np.take_along_axis(self.cost, self.maps.astype(np.int64), axis=2)

    @cached_property
    def monotone(self) -> bool:
        """Does no node cost less than a node below it (every leaf's cost non-decreasing up the levels)?"""
        return bool((np.diff(self.leafcost, axis=1) >= 0).all())

    @cached_property
    def tree(self) -> np.ndarray:
        """Per QI: is the smallest node covering two clusters found from one leaf of each (the node of their
        common ancestor)? True for categorical QIs; for ordered ones when every node's leaves are contiguous,
        so that the node over an interval's end covers the interval."""
        out = ~self.ordered
        for a in np.flatnonzero(self.ordered):
            m = self.maps[a]
            starts = np.concatenate([np.ones((m.shape[0], 1), bool), m[:, 1:] != m[:, :-1]], axis=1)
            out[a] = all(len(np.unique(row[st])) == int(st.sum()) for row, st in zip(m, starts, strict=True))
        return out

    @classmethod
    def from_batch(cls, batch: EncodedBatch) -> Space:
        qis = batch.qis
        top = max(q.height for q in qis)
        n_leaves = max(q.n_leaves for q in qis)
        n_codes = max(q.n_codes(lv) for q in qis for lv in range(q.height + 1))
        maps = np.zeros((len(qis), top + 1, n_leaves), dtype=np.int32)
        cost = np.ones((len(qis), top + 1, n_codes), dtype=np.float64)
        vals = np.zeros((len(qis), n_leaves), dtype=np.float64)
        ordered = np.zeros(len(qis), dtype=np.bool_)
        for a, q in enumerate(qis):
            for lv in range(top + 1):
                src = min(lv, q.height)
                maps[a, lv, :q.n_leaves] = q.maps[src]
                cost[a, lv, :q.n_codes(src)] = q.cost[src]
            if q.leaf_values is not None and bool(np.all(np.diff(q.leaf_values) > 0)):
                ordered[a] = True
                lo, hi = q.domain if q.domain is not None else (float(q.leaf_values[0]), float(q.leaf_values[-1]))
                vals[a, :q.n_leaves] = (q.leaf_values - lo) / (hi - lo) if hi > lo else 0.0
        w = np.asarray(batch.weights, dtype=np.float64)
        return cls(maps=maps, cost=cost, ordered=ordered, vals=vals, weights=w / w.sum(),
                   heights=np.array([q.height for q in qis], dtype=np.int64),
                   labels=tuple(q.labels for q in qis))

    def nodes(self, leaves: np.ndarray) -> np.ndarray:
        """Level and code of the smallest node covering each QI's leaves: shape (d, 2) for ``leaves`` (m, d)."""
        out = np.zeros((self.d, 2), dtype=np.int64)
        for a in range(self.d):
            col = leaves[:, a]
            for lv in range(int(self.heights[a]) + 1):
                mapped = self.maps[a, lv, col]
                if (mapped == mapped[0]).all():
                    out[a] = lv, mapped[0]
                    break
        return out

    def node_loss(self, nodes: np.ndarray) -> float:
        """Weighted loss of a cluster released as ``nodes`` (d, 2): the released rows' loss metric."""
        per = self.cost[np.arange(self.d), nodes[:, 0], nodes[:, 1]]
        return float((per * self.weights).sum())

    def node_costs(self, nodes: np.ndarray) -> np.ndarray:
        """Per-QI cost of ``nodes`` (d, 2)."""
        return self.cost[np.arange(self.d), nodes[:, 0], nodes[:, 1]]

    def label_row(self, nodes: np.ndarray) -> list[str]:
        """The released label of each QI for ``nodes`` (d, 2)."""
        return [str(self.labels[a][int(nodes[a, 0])][int(nodes[a, 1])]) for a in range(self.d)]

    def covers(self, nodes: np.ndarray, leaves: np.ndarray) -> bool:
        """Does the generalisation ``nodes`` (d, 2) cover the tuple ``leaves`` (d,)?"""
        return bool((self.maps[np.arange(self.d), nodes[:, 0], leaves] == nodes[:, 1]).all())


def join_il_numpy(space: Space, lo: np.ndarray, hi: np.ndarray, lvl: np.ndarray,
                  xlo: np.ndarray, xhi: np.ndarray, xlvl: np.ndarray) -> np.ndarray:
    """Reference (numpy) for :func:`core.engines.castle.kernels.join_il`: the loss of each cluster
    ``(lo, hi, lvl)`` (n, d) joined with the cluster ``(xlo, xhi, xlvl)`` (d,)."""
    n, d = lo.shape
    out = np.zeros(n)
    for a in range(d):
        o = bool(space.ordered[a])
        a_leaf = np.minimum(lo[:, a], xlo[a]) if o else lo[:, a]
        b_leaf = np.maximum(hi[:, a], xhi[a]) if o else np.full(n, xlo[a])
        floor = np.maximum(lvl[:, a], xlvl[a])
        levels = np.arange(space.maps.shape[1])[:, None]
        eq = (space.maps[a][:, a_leaf] == space.maps[a][:, b_leaf]) & (levels >= floor[None, :])
        level = eq.argmax(axis=0)
        code = space.maps[a][level, a_leaf]
        c = space.cost[a][level, code]
        if o:
            c = c + HULL_EPS * (space.vals[a, b_leaf] - space.vals[a, a_leaf])
        out += space.weights[a] * c
    return out
