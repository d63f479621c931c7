"""numba kernels of the two homogeneous clustering heuristics (k-member and l-greedy).

Both grow one cluster at a time and add, among the candidate records, the one that minimizes the
cluster's NCP after the addition (ILS paper eq. 1-3, set-based for nominal QIs): the cost of adding
``x`` is O(d) given the cluster's per-QI min / max and its per-value presence flags. Records left
over when fewer than ``k`` remain join the cluster whose total information loss
|c| * NCP(c) grows least (Byun et al.'s last step). Ties go to the first candidate scanned.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _add_cost(x, xn, xc, lo, hi, present, ndist, inv_range, cat_den, offs):  # pragma: no cover
    """NCP sum of a cluster (given by lo / hi / present / ndist) after adding record ``x``."""
    cost = 0.0
    for j in range(xn.shape[1]):
        v = xn[x, j]
        cost += (max(hi[j], v) - min(lo[j], v)) * inv_range[j]
    for j in range(xc.shape[1]):
        nd = ndist[j] + (0 if present[offs[j] + xc[x, j]] else 1)
        cost += (nd - 1) * cat_den[j]
    return cost


@njit(cache=True, inline="always")
def _add(x, xn, xc, lo, hi, present, ndist, offs):  # pragma: no cover
    for j in range(xn.shape[1]):
        v = xn[x, j]
        lo[j] = min(lo[j], v)
        hi[j] = max(hi[j], v)
    for j in range(xc.shape[1]):
        p = offs[j] + xc[x, j]
        if not present[p]:
            present[p] = True
            ndist[j] += 1


@njit(cache=True, nogil=True)
def _place_leftovers(cls, ncl, xn, xc, lo, hi, present, ndist, size, inv_range, cat_den, offs):  # pragma: no cover
    """Put every unassigned record into the cluster whose |c| * NCP(c) grows least."""
    for x in range(xn.shape[0]):
        if cls[x] >= 0:
            continue
        best, best_inc = -1, np.inf
        for c in range(ncl):
            before = 0.0
            for j in range(xn.shape[1]):
                before += (hi[c, j] - lo[c, j]) * inv_range[j]
            for j in range(xc.shape[1]):
                before += (ndist[c, j] - 1) * cat_den[j]
            after = _add_cost(x, xn, xc, lo[c], hi[c], present[c], ndist[c], inv_range, cat_den, offs)
            inc = (size[c] + 1) * after - size[c] * before
            if inc < best_inc:
                best_inc, best = inc, c
        _add(x, xn, xc, lo[best], hi[best], present[best], ndist[best], offs)
        size[best] += 1
        cls[x] = best


def _alloc(n, k, xn, xc, offs):
    m = max(n // k, 1)
    return (np.full((m, xn.shape[1]), np.inf), np.full((m, xn.shape[1]), -np.inf),
            np.zeros((m, int(offs[-1])), dtype=np.bool_), np.zeros((m, xc.shape[1]), dtype=np.int64),
            np.zeros(m, dtype=np.int64))


@njit(cache=True, nogil=True)
def kmember_kernel(xn, xc, inv_range, cat_den, offs, k, rem, cls, st, lo, hi, present, ndist, size,
                   todo):  # pragma: no cover
    """Greedy k-member clustering (Byun et al. 2007): up to ``todo`` more clusters, resumable.

    ``st`` holds (records left, last record used, clusters made) and ``rem`` the records left in its
    first ``st[0]`` places, so calls in a row do exactly what one call over every cluster would.
    The seed of each cluster is the remaining record furthest from the last record used (the first
    time: from the random record ``first``); the distance of two records is the NCP sum of the
    pair. Then k - 1 times the remaining record with the least NCP(cluster + record) is added.
    """
    nrem, r, ncl = st[0], st[1], st[2]
    made = 0
    while nrem >= k and made < todo:
        far, far_d, far_t = -1, -1.0, -1
        for t in range(nrem):
            x = rem[t]
            dist = 0.0
            for j in range(xn.shape[1]):
                dist += abs(xn[x, j] - xn[r, j]) * inv_range[j]
            for j in range(xc.shape[1]):
                if xc[x, j] != xc[r, j]:
                    dist += cat_den[j]
            if dist > far_d:
                far, far_d, far_t = x, dist, t
        r = far
        nrem -= 1
        rem[far_t] = rem[nrem]
        _add(r, xn, xc, lo[ncl], hi[ncl], present[ncl], ndist[ncl], offs)
        cls[r] = ncl
        for _ in range(k - 1):
            best, best_c, best_t = -1, np.inf, -1
            for t in range(nrem):
                c = _add_cost(rem[t], xn, xc, lo[ncl], hi[ncl], present[ncl], ndist[ncl], inv_range, cat_den, offs)
                if c < best_c:
                    best, best_c, best_t = rem[t], c, t
            r = best
            nrem -= 1
            rem[best_t] = rem[nrem]
            _add(r, xn, xc, lo[ncl], hi[ncl], present[ncl], ndist[ncl], offs)
            cls[r] = ncl
        size[ncl] = k
        ncl += 1
        made += 1
    st[0], st[1], st[2] = nrem, r, ncl


@njit(cache=True, nogil=True)
def lgreedy_kernel(xn, xc, inv_range, cat_den, offs, k, order, window,  # pragma: no cover
                   cls, st, lo, hi, present, ndist, size, todo):
    """Sorting-based greedy clustering (l-greedy, after Liang & Samavi 2020): up to ``todo`` more
    clusters, resumable (``st`` holds records left, scan pointer, clusters made).

    Records are visited in ``order``; each cluster is seeded by the first unassigned record and
    completed k - 1 times by the unassigned record (among the next ``window`` unassigned ones in
    ``order``; 0 = all of them) with the least NCP(cluster + record), ties to the earliest in order.
    """
    n = xn.shape[0]
    nrem, ptr, ncl = st[0], st[1], st[2]
    limit = window if window > 0 else n
    made = 0
    while nrem >= k and made < todo:
        while cls[order[ptr]] >= 0:
            ptr += 1
        r = order[ptr]
        _add(r, xn, xc, lo[ncl], hi[ncl], present[ncl], ndist[ncl], offs)
        cls[r] = ncl
        nrem -= 1
        for _ in range(k - 1):
            best, best_c, seen = -1, np.inf, 0
            t = ptr + 1
            while t < n and seen < limit:
                x = order[t]
                t += 1
                if cls[x] >= 0:
                    continue
                seen += 1
                c = _add_cost(x, xn, xc, lo[ncl], hi[ncl], present[ncl], ndist[ncl], inv_range, cat_den, offs)
                if c < best_c:
                    best, best_c = x, c
            _add(best, xn, xc, lo[ncl], hi[ncl], present[ncl], ndist[ncl], offs)
            cls[best] = ncl
            nrem -= 1
        size[ncl] = k
        ncl += 1
        made += 1
    st[0], st[1], st[2] = nrem, ptr, ncl


# Record evaluations per kernel call (tens of ms of one core): the Python loop between calls is
# where a Ctrl-C (KeyboardInterrupt) and the progress line get in. The chunks change nothing else: the
# clusters are the ones a single call over all records makes, bit for bit.
CHUNK_EVALS = 1_000_000


def _clusters_per_call(left: int, k: int, window: int = 0) -> int:
    per_cluster = max(1, (min(left, window) if window > 0 else left) * k)
    return max(1, CHUNK_EVALS // per_cluster)


def kmember_clusters(xn, xc, inv_range, cat_den, offs, k: int, first: int,
                     progress: Callable[[float, str], None] | None = None) -> np.ndarray:
    n = xn.shape[0]
    lo, hi, present, ndist, size = _alloc(n, k, xn, xc, offs)
    rem, cls, st = np.arange(n), np.full(n, -1, dtype=np.int64), np.array([n, first, 0], dtype=np.int64)
    while st[0] >= k:
        kmember_kernel(xn, xc, inv_range, cat_den, offs, k, rem, cls, st, lo, hi, present, ndist, size,
                       _clusters_per_call(int(st[0]), k))
        if progress is not None:
            progress(1.0 - st[0] / n, f"{st[2]} clusters")
    _place_leftovers(cls, int(st[2]), xn, xc, lo, hi, present, ndist, size, inv_range, cat_den, offs)
    return cls


def lgreedy_clusters(xn, xc, inv_range, cat_den, offs, k: int, order: np.ndarray, window: int,
                     progress: Callable[[float, str], None] | None = None) -> np.ndarray:
    n = xn.shape[0]
    lo, hi, present, ndist, size = _alloc(n, k, xn, xc, offs)
    cls, st = np.full(n, -1, dtype=np.int64), np.array([n, 0, 0], dtype=np.int64)
    while st[0] >= k:
        lgreedy_kernel(xn, xc, inv_range, cat_den, offs, k, order, window, cls, st, lo, hi, present, ndist, size,
                       _clusters_per_call(int(st[0]), k, window))
        if progress is not None:
            progress(1.0 - st[0] / n, f"{st[2]} clusters")
    _place_leftovers(cls, int(st[2]), xn, xc, lo, hi, present, ndist, size, inv_range, cat_den, offs)
    return cls
