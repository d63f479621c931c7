"""numba kernels for CASTLE's inner loops (the numpy reference is :func:`space.join_il_numpy`).

Every arriving tuple is compared with every open cluster (best selection), every merge step with every
open cluster and every reuse check with every published cluster. Measured on Adult (8 QIs, 5,000
clusters, load average 4.4 on 2 shared cores): the vectorised numpy reference takes about 6.3 ms per
call (it materialises clusters x QIs x levels arrays), this loop, which stops at the first common
level, about 1.4 ms.
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
    n, d = lo.shape
    levels, n_leaves = maps.shape[1], maps.shape[2]
    top = levels - 1
    lca = np.empty((d, n_leaves), np.int32)
    for a in range(d):
        if not tree[a]:
            continue
        for leaf in range(n_leaves):
            level = xlvl[a]
            while level < top and maps[a, level, leaf] != maps[a, level, xlo[a]]:
                level += 1
            lca[a, leaf] = level
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
        out[i] = total
    return out
