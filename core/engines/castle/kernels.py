"""numba kernels for CASTLE's inner loops (the numpy reference is :func:`space.join_il_numpy`).

Every arriving tuple is compared with every open cluster (best selection), every merge step with every
open cluster and every reuse check with every published cluster. Measured on Adult (8 QIs, 5,000
clusters, load average 4.4 on 2 shared cores): the vectorised numpy reference takes about 6.3 ms per
call (it materialises clusters x QIs x levels arrays), this loop, which stops at the first common
level, about 1.4 ms. The stream uses :func:`join_il_lca`, which finds the common level from a table
computed once per call (profile of Adult k=5, delta=20000: 75 % of the CPU time was :func:`join_il`;
1,557 -> 3,831 tuples per CPU second), and :func:`nearest_tuples` for the merge by nearest tuples.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def join_il(lo: np.ndarray, hi: np.ndarray, lvl: np.ndarray, active: np.ndarray, xlo: np.ndarray,
            xhi: np.ndarray, xlvl: np.ndarray, maps: np.ndarray, cost: np.ndarray, ordered: np.ndarray,
            vals: np.ndarray, weights: np.ndarray, hull_eps: float) -> np.ndarray:  # pragma: no cover
    """Loss of each active cluster ``(lo, hi, lvl)[i]`` (n, d) joined with the cluster ``(xlo, xhi, xlvl)``
    (a tuple is the cluster ``(x, x, 0)``); inactive rows get +inf."""
    n, d = lo.shape
    top = maps.shape[1] - 1
    out = np.full(n, np.inf)
    for i in range(n):
        if not active[i]:
            continue
        total = 0.0
        for a in range(d):
            if ordered[a]:
                p = min(lo[i, a], xlo[a])
                q = max(hi[i, a], xhi[a])
            else:
                p = lo[i, a]
                q = xlo[a]
            level = max(lvl[i, a], xlvl[a])
            while level < top and maps[a, level, p] != maps[a, level, q]:
                level += 1
            c = cost[a, level, maps[a, level, p]]
            if ordered[a]:
                c += hull_eps * (vals[a, q] - vals[a, p])
            total += weights[a] * c
        out[i] = total
    return out


@njit(cache=True, nogil=True)
def join_one(lo: np.ndarray, hi: np.ndarray, lvl: np.ndarray, xlo: np.ndarray, xhi: np.ndarray,
             xlvl: np.ndarray, maps: np.ndarray, ordered: np.ndarray) -> None:  # pragma: no cover
    """Enlarge the cluster ``(lo, hi, lvl)`` (d,) in place to cover the cluster ``(xlo, xhi, xlvl)``."""
    top = maps.shape[1] - 1
    for a in range(lo.shape[0]):
        if ordered[a]:
            p = min(lo[a], xlo[a])
            q = max(hi[a], xhi[a])
        else:
            p = lo[a]
            q = xlo[a]
        level = max(lvl[a], xlvl[a])
        while level < top and maps[a, level, p] != maps[a, level, q]:
            level += 1
        lo[a] = p
        hi[a] = q if ordered[a] else p
        lvl[a] = level


@njit(cache=True, nogil=True)
def cover_best(levels: np.ndarray, codes: np.ndarray, loss: np.ndarray, valid: np.ndarray, ids: np.ndarray,
               x: np.ndarray, maps: np.ndarray) -> int:  # pragma: no cover
    """Index of the published cluster of least ``loss`` whose nodes ``(levels, codes)`` (n, d) cover the
    tuple ``x`` (d,) (the lowest cluster id on ties), or -1."""
    best, best_loss, best_id = -1, np.inf, 0
    for i in range(levels.shape[0]):
        if not valid[i] or loss[i] > best_loss or (loss[i] == best_loss and ids[i] > best_id):
            continue
        ok = True
        for a in range(x.shape[0]):
            if maps[a, levels[i, a], x[a]] != codes[i, a]:
                ok = False
                break
        if ok:
            best, best_loss, best_id = i, loss[i], ids[i]
    return best


@njit(cache=True, nogil=True)
def _lca(maps: np.ndarray, tree: np.ndarray, xlo: np.ndarray, xlvl: np.ndarray) -> np.ndarray:  # pragma: no cover
    """``lca[a, leaf]``: the lowest level >= ``xlvl[a]`` where ``leaf`` and ``xlo[a]`` share a node (tree QIs)."""
    d, levels, n_leaves = maps.shape
    lca = np.zeros((d, n_leaves), np.int32)
    for a in range(d):
        if not tree[a]:
            continue
        for leaf in range(n_leaves):
            level = xlvl[a]
            while level < levels - 1 and maps[a, level, leaf] != maps[a, level, xlo[a]]:
                level += 1
            lca[a, leaf] = level
    return lca


@njit(cache=True, nogil=True)
def _row_cost(lo: np.ndarray, hi: np.ndarray, lvl: np.ndarray, i: int, xlo: np.ndarray, xhi: np.ndarray,
              xlvl: np.ndarray, lca: np.ndarray, maps: np.ndarray, leafcost: np.ndarray, tree: np.ndarray,
              ordered: np.ndarray, vals: np.ndarray, weights: np.ndarray, hull_eps: float) -> float:  # pragma: no cover
    """Loss of cluster ``i`` of ``(lo, hi, lvl)`` joined with the cluster ``(xlo, xhi, xlvl)``."""
    top = maps.shape[1] - 1
    total = 0.0
    for a in range(lo.shape[1]):
        if ordered[a]:
            p = min(lo[i, a], xlo[a])
            q = max(hi[i, a], xhi[a])
        else:
            p = lo[i, a]
            q = xlo[a]
        if tree[a]:
            level = max(lvl[i, a], lca[a, lo[i, a]])
        else:
            level = max(lvl[i, a], xlvl[a])
            while level < top and maps[a, level, p] != maps[a, level, q]:
                level += 1
        c = leafcost[a, level, p]
        if ordered[a]:
            c += hull_eps * (vals[a, q] - vals[a, p])
        total += weights[a] * c
    return total


@njit(cache=True, nogil=True)
def join_il_lca(lo: np.ndarray, hi: np.ndarray, lvl: np.ndarray, active: np.ndarray, xlo: np.ndarray,
                xhi: np.ndarray, xlvl: np.ndarray, maps: np.ndarray, leafcost: np.ndarray, tree: np.ndarray,
                ordered: np.ndarray, vals: np.ndarray, weights: np.ndarray,
                hull_eps: float) -> np.ndarray:  # pragma: no cover
    """:func:`join_il` with the level climb hoisted out of the loop over clusters.

    On a QI whose nodes are subtrees of contiguous leaves (``tree[a]``: every categorical QI, and an
    ordered one whose nodes are intervals) the smallest node covering cluster i and the cluster x is at
    level max(lvl[i], xlvl, lca(lo[i], xlo)): the nodes of both clusters nest in their common ancestor.
    ``lca(leaf, xlo)`` is computed once per call for every leaf, so each cluster costs two table
    look-ups per QI (``leafcost[a, level, leaf]``: the cost of the leaf's node at that level). Other
    QIs climb as :func:`join_il` does. Same result as :func:`join_il`."""
    lca = _lca(maps, tree, xlo, xlvl)
    out = np.full(lo.shape[0], np.inf)
    for i in range(lo.shape[0]):
        if active[i]:
            out[i] = _row_cost(lo, hi, lvl, i, xlo, xhi, xlvl, lca, maps, leafcost, tree, ordered, vals, weights,
                               hull_eps)
    return out


COST_TIE = 1e-9  # losses closer than this are one loss: the older tuple wins, not the last bit of a sum


@njit(cache=True, nogil=True)
def _loses(cost: float, arrival: int, best_cost: float, best_arrival: int) -> bool:  # pragma: no cover
    """A row of loss (or lower bound) ``cost`` cannot beat the best so far: it is dearer by more than
    ``COST_TIE``, or not cheaper by more than that and no older."""
    return cost > best_cost + COST_TIE or (cost >= best_cost - COST_TIE and arrival >= best_arrival)


@njit(cache=True, nogil=True)
def nearest_tuples(leaves: np.ndarray, pts: np.ndarray, alive: np.ndarray, arrival: np.ndarray, pcode: np.ndarray,
                   scode: np.ndarray, have_p: np.ndarray, have_s: np.ndarray, k: int, ell: int, lo: np.ndarray,
                   hi: np.ndarray, lvl: np.ndarray, maps: np.ndarray, leafcost: np.ndarray, tree: np.ndarray,
                   ordered: np.ndarray, vals: np.ndarray, weights: np.ndarray, hull_eps: float,
                   give_up: float, monotone: bool) -> tuple[np.ndarray, float]:  # pragma: no cover
    """Rows of ``leaves`` a cluster ``(lo, hi, lvl)`` (updated in place) holding the persons ``have_p`` and
    values ``have_s`` (codes) takes in, one at a time, until it has ``k`` persons and ``ell`` values: each
    time the alive row of least joined loss (the lowest ``arrival`` on ties, losses within ``COST_TIE``
    counting as equal so that rounding noise never decides) among those bringing a new
    person (while it lacks persons) and a new value (while it lacks values). Empty when that fails.
    ``pts``: zeros shaped as ``leaves`` (its rows are points, level 0). Returns the rows and -1, or, as soon
    as the cluster's own loss reaches ``give_up`` (it only grows), no rows and that loss. ``monotone``: a
    node never costs less than a node below it, so a row's loss against a smaller cluster is a lower bound
    of its loss now and is recomputed only when that bound could win (lazy greedy; same rows)."""
    pids, sens = set(have_p), set(have_s)
    n, d = leaves.shape
    zero = np.zeros(d, np.int32)
    cost = np.zeros(n)  # a lower bound of each row's joined loss, exact where ``fresh`` is ``version``
    fresh = np.full(n, -1, np.int64)
    taken = np.empty(n, np.int64)
    m, stale, version = 0, True, 0
    lca = np.zeros((d, maps.shape[2]), np.int32)
    while len(pids) < k or len(sens) < ell:
        need_p, need_s = len(pids) < k, len(sens) < ell
        if stale:  # the joined losses change only when the cluster's generalisation does
            lca = _lca(maps, tree, lo, lvl)
            own = _row_cost(lo.reshape(1, d), hi.reshape(1, d), lvl.reshape(1, d), 0, lo, hi, lvl, lca, maps,
                            leafcost, tree, ordered, vals, weights, hull_eps)
            if own >= give_up:
                return taken[:0], own
            version += 1
            stale = False
            if not monotone:  # old losses are no lower bounds: all afresh
                for r in range(n):
                    if alive[r]:
                        cost[r] = _row_cost(leaves, leaves, pts, r, lo, hi, lvl, lca, maps, leafcost, tree,
                                            ordered, vals, weights, hull_eps)
                        fresh[r] = version
        best, best_cost, best_arrival = -1, np.inf, 0
        for r in range(n):  # a row whose bound already loses is skipped without computing its loss
            if not alive[r] or _loses(cost[r], arrival[r], best_cost, best_arrival):
                continue
            if (need_p and pcode[r] in pids) or (need_s and scode[r] in sens):
                continue
            if fresh[r] != version:
                cost[r] = _row_cost(leaves, leaves, pts, r, lo, hi, lvl, lca, maps, leafcost, tree, ordered, vals,
                                    weights, hull_eps)
                fresh[r] = version
                if _loses(cost[r], arrival[r], best_cost, best_arrival):
                    continue
            best, best_cost, best_arrival = r, cost[r], arrival[r]
        if best < 0:
            return taken[:0], -1.0
        alive[best] = False
        taken[m] = best
        m += 1
        pids.add(pcode[best])
        sens.add(scode[best])
        was = lo.copy(), hi.copy(), lvl.copy()
        join_one(lo, hi, lvl, leaves[best], leaves[best], zero, maps, ordered)
        stale = not ((was[0] == lo).all() and (was[1] == hi).all() and (was[2] == lvl).all())
    return taken[:m], -1.0
