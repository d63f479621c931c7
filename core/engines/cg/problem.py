"""The numeric form of a CG problem: per-QI arrays for the kernels, severities and orderings.

Local recoding generalizes each class to the least common generalization of its members. With
``bands = "nested"`` (the default) every QI uses the lowest common ancestor in its hierarchy (the
TREE case below, numeric bands included), so the labels nest and the search's loss is that of
the released nodes. With ``bands = "free"``:

* ``numeric`` QIs with an interval hierarchy (ordered leaves) use the closed range of the class,
  labelled ``[lo, hi]`` (:func:`core.hierarchies.intervals.range_label`); loss (max - min) / (domain
  max - domain min) (eq. 1, numerical case);
* every other QI (categorical, masked, dates, numeric with a table hierarchy) uses the lowest
  common ancestor in its hierarchy; loss (leaves under it - 1) / (leaves - 1) (eq. 1, categorical
  case; for dates the hierarchy's day-span cost).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.encoding import EncodedBatch
from core.hierarchies import EncodedQI

RANGE, TREE = 0, 1


def _is_range(q: EncodedQI) -> bool:
    return q.kind == "numeric" and q.leaf_values is not None and q.domain is not None


def _path_rank(q: EncodedQI) -> np.ndarray:
    """Rank of each leaf when leaves are sorted by their path from the root (siblings adjacent)."""
    if q.leaf_values is not None:
        order = np.argsort(q.leaf_values, kind="stable")
    else:
        keys = [q.maps[lvl] for lvl in range(q.height + 1)]  # lexsort: last key is primary
        order = np.lexsort(keys)
    rank = np.empty(q.n_leaves, dtype=np.float64)
    rank[order] = np.arange(q.n_leaves)
    return rank


@dataclass(frozen=True, eq=False)
class Problem:
    """Everything the kernels need, as contiguous numpy arrays (shapes use n rows, d QIs)."""

    n: int
    d: int
    kind: np.ndarray  # (d,) RANGE or TREE
    x: np.ndarray  # (d, n) float: value for RANGE QIs, 0 otherwise
    span: np.ndarray  # (d,) domain width of RANGE QIs (1 otherwise)
    g: np.ndarray  # (d, hmax + 1, n) int32: code of each row at each level (TREE QIs)
    height: np.ndarray  # (d,) int64: top level of TREE QIs (0 for RANGE)
    cost_flat: np.ndarray  # costs of every TREE code at every level, concatenated
    cost_off: np.ndarray  # (d, hmax + 1) int64 offsets into cost_flat
    w: np.ndarray  # (d,) weights normalised to sum 1
    sens: np.ndarray  # (n,) int64 sensitive code
    m: int  # number of sensitive values
    sev: np.ndarray  # (n,) severity of each row
    sev_value: np.ndarray  # (m,) severity of each sensitive value
    key: np.ndarray  # (d, n) float ordinal key per QI (for orderings)
    xr: np.ndarray  # (n, d) row-major copy of x for the kernels
    gr: np.ndarray  # (n, d, hmax + 1) row-major copy of g for the kernels
    nests: bool = False  # every TREE QI's codes nest and share one top code (see :func:`nests`)

    @property
    def total_severity(self) -> float:
        return float(self.sev.sum())


def build_problem(batch: EncodedBatch, weights: np.ndarray, row_sev: np.ndarray, nested: bool = True) -> Problem:
    """The problem of ``batch``; with ``nested`` every QI (numeric ones too) is generalized on its
    hierarchy's nodes (TREE), so the search's loss is that of the node labels it will release."""
    n, d = batch.n, batch.d
    hmax = max(int(q.height) for q in batch.qis)
    kind = np.zeros(d, np.int64)
    x = np.zeros((d, n))
    span = np.ones(d)
    g = np.zeros((d, hmax + 1, n), np.int32)
    height = np.zeros(d, np.int64)
    cost_off = np.zeros((d, hmax + 1), np.int64)
    costs: list[np.ndarray] = []
    offset = 0
    key = np.zeros((d, n))
    for a, q in enumerate(batch.qis):
        key[a] = _path_rank(q)[q.codes]
        if not nested and _is_range(q):
            kind[a] = RANGE
            x[a] = np.asarray(q.leaf_values, float)[q.codes]
            lo, hi = q.domain  # type: ignore[misc]
            span[a] = max(float(hi) - float(lo), 1e-12)
            continue
        kind[a] = TREE
        height[a] = q.height
        for lvl in range(q.height + 1):
            g[a, lvl] = q.maps[lvl][q.codes]
            cost_off[a, lvl] = offset
            costs.append(np.asarray(q.cost[lvl], float))
            offset += len(q.cost[lvl])
    w = np.asarray(weights, float)
    sens = np.asarray(batch.sensitive_codes, np.int64)
    m = len(batch.sensitive_labels) if batch.sensitive_labels is not None else int(sens.max()) + 1
    sev_value = np.asarray(batch.severity, float)
    return Problem(
        n=n, d=d, kind=kind, x=np.ascontiguousarray(x), span=span, g=np.ascontiguousarray(g), height=height,
        cost_flat=np.concatenate(costs) if costs else np.zeros(1), cost_off=cost_off, w=w / w.sum(),
        sens=sens, m=m, sev=np.asarray(row_sev, float), sev_value=sev_value, key=key,
        xr=np.ascontiguousarray(x.T), gr=np.ascontiguousarray(g.transpose(2, 0, 1)), nests=nests(kind, g, height),
    )


def nests(kind: np.ndarray, g: np.ndarray, height: np.ndarray) -> bool:
    """Whether the rows' codes of every TREE QI form a tree with one root: each code at a level has one
    parent code at the next, and all rows share their top code. Then the lowest level at which a set of
    rows shares one code is the same whichever member it is measured from, and one member's removal
    can be read from a class's stored state (the search's shortcut, :func:`core.engines.cg.kernels._without`)."""
    for a in np.flatnonzero(kind == TREE):
        top = int(height[a])
        if len(np.unique(g[a, top])) > 1:
            return False
        for lvl in range(top):
            pairs = np.unique(g[a, lvl].astype(np.int64) << 32 | g[a, lvl + 1].astype(np.int64))
            if len(pairs) != len(np.unique(g[a, lvl])):
                return False
    return True


def kd_order(p: Problem, rng: np.random.Generator, noise: float = 0.0, leaf: int = 2) -> np.ndarray:
    """A locality-preserving ordering of the rows (k-d tree leaf order), vectorized level by level.

    Every group of rows (initially all rows) is split at its median along the QI that contributes
    most weighted loss to the group, w_a * IL_a(group), optionally multiplied by ``1 + noise * U``
    (U uniform, from ``rng``) to diversify orderings. Groups of at most ``leaf`` rows or with no
    spread stop splitting. The result lists the rows group by group.
    """
    n = p.n
    order = np.arange(n)
    group = np.zeros(n, np.int64)
    tie = rng.random(n) if noise > 0 else np.zeros(n)
    for _ in range(64):
        starts = np.flatnonzero(np.r_[True, group[order][1:] != group[order][:-1]])
        sizes = np.diff(np.r_[starts, n])
        spread = group_loss(p, order, starts) * p.w[:, None]  # (d, groups)
        if noise > 0:
            spread = spread * (1 + noise * rng.random(spread.shape))
        best = spread.argmax(axis=0)
        active = (sizes > leaf) & (spread.max(axis=0) > 0)
        if not active.any():
            break
        gid = np.repeat(np.arange(len(starts)), sizes)
        attr = best[gid]
        val = p.key[attr, order]
        new = np.lexsort((tie[order], val, gid))
        order = order[new]
        gid = gid[new]
        pos = np.arange(n) - starts[gid]
        half = (pos >= sizes[gid] // 2) & active[gid]
        group = np.empty(n, np.int64)
        group[order] = gid * 2 + half
    return order


def group_loss(p: Problem, order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """IL_a of every contiguous group of ``order`` (groups begin at ``starts``), shape (d, groups)."""
    out = np.zeros((p.d, len(starts)))
    for a in range(p.d):
        if p.kind[a] == RANGE:
            v = p.x[a, order]
            out[a] = (np.maximum.reduceat(v, starts) - np.minimum.reduceat(v, starts)) / p.span[a]
            continue
        done = np.zeros(len(starts), bool)
        for lvl in range(int(p.height[a]) + 1):
            codes = p.g[a, lvl, order]
            lo, hi = np.minimum.reduceat(codes, starts), np.maximum.reduceat(codes, starts)
            here = (lo == hi) & ~done
            out[a, here] = p.cost_flat[p.cost_off[a, lvl] + lo[here]]
            done |= here
    return np.minimum(out, 1.0)
