"""CASTLE's split of a large cluster before it is output (Cao et al., Fig. "split" and its l-diverse
variant), over one representative tuple per person.

A cluster holding at least 2k persons is cut into sub-clusters of about k persons each, so that it is
not released with the loss of one wide generalisation. As in the paper the tuples are first put into
buckets; we keep one representative (the earliest tuple) per person and attach the person's other
tuples to the sub-cluster of their representative afterwards, so a person's reports stay together and
every sub-cluster counts k *distinct* persons.

* ``split_k`` (l <= 1): while at least k representatives remain, pick one at random and form a
  sub-cluster with its k - 1 nearest remaining representatives (nearest: least loss of the pair).
* ``split_l`` (l > 1): buckets by sensitive value. While at least l buckets are non-empty and at least
  k representatives remain, pick a random representative t; add the nearest representative of each of
  the l - 1 other buckets whose nearest is closest to t, then the nearest others until k persons. Every
  sub-cluster so has k persons and l distinct sensitive values (Prink's variant can stop at k values
  before reaching l; this one cannot).

Representatives left over (fewer than k, or fewer than l buckets) join their nearest sub-cluster.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from core.engines.castle.kernels import join_il
from core.engines.castle.space import HULL_EPS, Space


def _pair_loss(space: Space, reps: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Loss of the two-tuple cluster {rep, x} for each row of ``reps`` (m, d)."""
    zeros = np.zeros_like(reps)
    return join_il(reps, reps, zeros, np.ones(len(reps), np.bool_), x, x, np.zeros_like(x), space.maps,
                   space.cost, space.ordered, space.vals, space.weights, HULL_EPS)


def _nearest(order_key: np.ndarray, count: int) -> np.ndarray:
    """Positions of the ``count`` smallest keys (ties by position)."""
    return np.argsort(order_key, kind="stable")[:count]


def _assign_leftovers(space: Space, leaves: np.ndarray, parts: list[list[int]], left: list[int]) -> None:
    """Each leftover representative joins the sub-cluster whose hull grows least (first on ties)."""
    if not left:
        return
    d = space.d
    lo = np.zeros((len(parts), d), np.int32)
    hi = np.zeros((len(parts), d), np.int32)
    lvl = np.zeros((len(parts), d), np.int32)
    for i, part in enumerate(parts):
        nodes = space.nodes(leaves[part])
        lvl[i] = nodes[:, 0]
        lo[i] = np.where(space.ordered, leaves[part].min(axis=0), leaves[part[0]])
        hi[i] = np.where(space.ordered, leaves[part].max(axis=0), leaves[part[0]])
    active = np.ones(len(parts), np.bool_)
    for r in left:
        x = leaves[r].astype(np.int32)
        cost = join_il(lo, hi, lvl, active, x, x, np.zeros(d, np.int32), space.maps, space.cost,
                       space.ordered, space.vals, space.weights, HULL_EPS)
        parts[int(np.argmin(cost))].append(r)


def split_k(space: Space, leaves: np.ndarray, k: int, rng: np.random.Generator) -> list[list[int]]:
    """Sub-clusters (lists of row positions of ``leaves``, one row per person) of k or more rows each."""
    remaining = list(range(len(leaves)))
    parts: list[list[int]] = []
    while len(remaining) >= k:
        t = remaining.pop(int(rng.integers(len(remaining))))
        if k > 1:
            rest = np.asarray(remaining)
            near = rest[_nearest(_pair_loss(space, leaves[rest], leaves[t]), k - 1)]
            taken = set(near.tolist())
            remaining = [r for r in remaining if r not in taken]
            parts.append([t, *near.tolist()])
        else:
            parts.append([t])
    _assign_leftovers(space, leaves, parts, remaining)
    return parts


def split_l(space: Space, leaves: np.ndarray, sens: Sequence[Hashable], k: int, l: int,  # noqa: E741
            rng: np.random.Generator) -> list[list[int]]:
    """Sub-clusters of k or more rows (one per person) with at least ``l`` distinct ``sens`` values each."""
    values = sorted(set(sens), key=repr)
    bucket_of = np.array([values.index(s) for s in sens])
    if len(values) < l:
        return [list(range(len(leaves)))]
    remaining = np.ones(len(leaves), bool)
    parts: list[list[int]] = []
    while remaining.sum() >= k and len(np.unique(bucket_of[remaining])) >= l:
        pool = np.flatnonzero(remaining)
        t = int(pool[int(rng.integers(len(pool)))])
        remaining[t] = False
        pool = np.flatnonzero(remaining)
        loss = _pair_loss(space, leaves[pool], leaves[t])
        chosen = [t]
        best: dict[int, tuple[float, int]] = {}  # other bucket -> (loss, row) of its nearest row
        for pos in np.argsort(loss, kind="stable"):
            b = int(bucket_of[pool[pos]])
            if b != bucket_of[t] and b not in best:
                best[b] = (float(loss[pos]), int(pool[pos]))
        for _loss, row in sorted(best.values())[:l - 1]:
            chosen.append(row)
        remaining[chosen] = False
        if len(chosen) < k:
            pool = np.flatnonzero(remaining)
            extra = pool[_nearest(_pair_loss(space, leaves[pool], leaves[t]), k - len(chosen))]
            remaining[extra] = False
            chosen.extend(int(r) for r in extra)
        parts.append(chosen)
    _assign_leftovers(space, leaves, parts, np.flatnonzero(remaining).tolist())
    return parts
