"""The §5 incremental data structures of the ILS paper and the O(d) delta of a 2-opt move.

The solution is a k-regular bipartite graph between original rows and anonymized rows, stored as

* ``M`` (n, k): the k original rows generalized by anonymized row ``b`` (``M[b, 0] == b``: the
  anonymized row of an original row always generalizes that row, so the released row is truthful
  and carries its own sensitive value);
* ``W`` (n, k): the k anonymized rows that generalize original row ``a`` (``W[a, 0] == a``).

Per anonymized row and QI it keeps (§5.1-5.3):

* ordered QIs: min, second min, max, second max of its matches (``mn1, mn2, mx1, mx2``) and their
  sum Υ (``sm``), so NCP and the SIL mean after removing one match and adding another cost O(1);
* nominal QIs: the number of supporting edges per value (``cnt``, eq. 8), the number of distinct
  values (``ndist``), and for SIL's mode a histogram of the counts (``hist``) with its maximum
  (``mxc``);
* ``rowcost``: the row's objective term, NCP(q'_i) (eq. 3) or distance_num + distance_cat (eq. 5-6).

The objective is ``rowcost.sum() / (d * n)`` (eq. 4 / eq. 7). Arrays travel as two tuples:
``S = (M, W, mn1, mn2, mx1, mx2, sm, cnt, ndist, hist, mxc, rowcost, rem, remmax)`` (mutable
state; ``rem`` / ``remmax`` are the GCP pruning bounds of :func:`removal_bounds`) and
``C = (xn, xc, offs, inv_range, cat_den, inv_std, inv_cstd, objective)`` (constants; objective is
0 for GCP and 1 for SIL). Applying a move rescans the two changed rows (O(k d)), as the second
min / max cannot be maintained under deletion in O(1).

The helpers here and in :mod:`.search` are ordinary kernel calls, not inlined in numba's IR
(``inline="always"``): inlining them took about 10 s of the family's 41 s first compile, and
measured no difference in run time (ILS on 5,000 Adult rows, same release). The gain functions
of :mod:`.fastgain` and :mod:`.greedy` stay inlined: k-member and l-greedy ran 2-3x slower
without it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

GCP, SIL = 0, 1


@njit(cache=True)
def rebuild_row(S, C, r):  # pragma: no cover
    """Recompute every structure of anonymized row ``r`` from its matches ``M[r]``."""
    M, cnt, ndist, hist, mxc, rowcost = S[0], S[7], S[8], S[9], S[10], S[11]
    xc, offs = C[1], C[2]
    k = M.shape[1]
    _scan_numeric(S, C, r)
    for j in range(xc.shape[1]):
        lo, hi = offs[j], offs[j + 1]
        for p in range(lo, hi):
            cnt[r, p] = 0
        for t in range(k + 1):
            hist[r, j, t] = 0
        nd, top = 0, 0
        for t in range(k):
            p = lo + xc[M[r, t], j]
            cnt[r, p] += 1
        for p in range(lo, hi):
            c = cnt[r, p]
            hist[r, j, c] += 1
            if c > 0:
                nd += 1
            top = max(top, c)
        ndist[r, j] = nd
        mxc[r, j] = top
    rowcost[r] = row_cost(S, C, r)
    removal_bounds(S, C, r)


@njit(cache=True)
def removal_bounds(S, C, r):  # pragma: no cover
    """GCP only: ``rem[r, t]`` = row r's NCP minus its NCP without match ``M[r, t]``.

    GCP is monotone (adding a match never narrows a range or a set), so replacing match t by any
    row gains at most ``rem[r, t]``: a 2-opt move (a, b), (c, d) can only improve when
    rem[b, slot of a] + rem[d, slot of c] > 0. The local search skips the others unevaluated.
    For SIL (not monotone) the bounds are +inf and nothing is skipped.
    """
    M, mn1, mn2, mx1, mx2, cnt, ndist, rowcost, rem, remmax = (S[0], S[2], S[3], S[4], S[5], S[7], S[8], S[11],
                                                               S[12], S[13])
    xn, xc, offs, inv_range, cat_den, objective = C[0], C[1], C[2], C[3], C[4], C[7]
    k = M.shape[1]
    if objective != GCP:
        for t in range(k):
            rem[r, t] = np.inf
        remmax[r] = np.inf
        return
    top = 0.0
    for t in range(k):
        o = M[r, t]
        cost = 0.0
        for j in range(xn.shape[1]):
            v = xn[o, j]
            lo = mn2[r, j] if v == mn1[r, j] else mn1[r, j]
            hi = mx2[r, j] if v == mx1[r, j] else mx1[r, j]
            if hi > lo:
                cost += (hi - lo) * inv_range[j]
        for j in range(xc.shape[1]):
            nd = ndist[r, j] - (1 if cnt[r, offs[j] + xc[o, j]] == 1 else 0)
            cost += (nd - 1) * cat_den[j]
        rem[r, t] = rowcost[r] - cost if t > 0 else 0.0
        top = max(top, rem[r, t])
    remmax[r] = top


@njit(cache=True)
def row_cost(S, C, r):  # pragma: no cover
    """The objective term of anonymized row ``r`` from its structures (O(d))."""
    M, mn1, mx1, sm, cnt, ndist, mxc = S[0], S[2], S[4], S[6], S[7], S[8], S[10]
    xn, xc, offs, inv_range, cat_den, inv_std, inv_cstd, objective = C
    cost = 0.0
    if objective == GCP:
        for j in range(xn.shape[1]):
            cost += (mx1[r, j] - mn1[r, j]) * inv_range[j]
        for j in range(xc.shape[1]):
            cost += (ndist[r, j] - 1) * cat_den[j]
        return cost
    k = M.shape[1]
    sq = 0.0
    for j in range(xn.shape[1]):
        z = (xn[r, j] - sm[r, j] / k) * inv_std[j]
        sq += z * z
    cost = np.sqrt(sq)
    for j in range(xc.shape[1]):
        if cnt[r, offs[j] + xc[r, j]] < mxc[r, j]:
            cost += inv_cstd[j]
    return cost


@njit(cache=True)
def replace_cost(S, C, r, o, i):  # pragma: no cover
    """Row ``r``'s objective term if its match ``o`` were replaced by ``i`` (O(d), no mutation)."""
    M, mn1, mn2, mx1, mx2, sm, cnt, ndist, hist, mxc = S[0], S[2], S[3], S[4], S[5], S[6], S[7], S[8], S[9], S[10]
    xn, xc, offs, inv_range, cat_den, inv_std, inv_cstd, objective = C
    cost = 0.0
    if objective == GCP:
        for j in range(xn.shape[1]):
            vo, vi = xn[o, j], xn[i, j]
            lo = mn2[r, j] if vo == mn1[r, j] else mn1[r, j]
            hi = mx2[r, j] if vo == mx1[r, j] else mx1[r, j]
            cost += (max(hi, vi) - min(lo, vi)) * inv_range[j]
        for j in range(xc.shape[1]):
            vo, vi = xc[o, j], xc[i, j]
            nd = ndist[r, j]
            if vo != vi:
                if cnt[r, offs[j] + vo] == 1:
                    nd -= 1
                if cnt[r, offs[j] + vi] == 0:
                    nd += 1
            cost += (nd - 1) * cat_den[j]
        return cost
    k = M.shape[1]
    sq = 0.0
    for j in range(xn.shape[1]):
        z = (xn[r, j] - (sm[r, j] - xn[o, j] + xn[i, j]) / k) * inv_std[j]
        sq += z * z
    cost = np.sqrt(sq)
    for j in range(xc.shape[1]):
        vo, vi, own = xc[o, j], xc[i, j], xc[r, j]
        base = offs[j]
        top = mxc[r, j]
        c_own = cnt[r, base + own]
        if vo != vi:
            c_o = cnt[r, base + vo]
            if c_o == top and hist[r, j, top] == 1:
                top -= 1
            c_i = cnt[r, base + vi] + 1
            top = max(top, c_i)
            if own == vo:
                c_own -= 1
            elif own == vi:
                c_own += 1
        if c_own < top:
            cost += inv_cstd[j]
    return cost


@njit(cache=True)
def move_gain(S, C, a, b, c, d):  # pragma: no cover
    """Decrease of the objective sum if edges (a, b), (c, d) become (a, d), (c, b); > 0 improves."""
    rowcost = S[11]
    return rowcost[b] + rowcost[d] - replace_cost(S, C, b, a, c) - replace_cost(S, C, d, c, a)


@njit(cache=True)
def has(row, x):  # pragma: no cover
    for t in range(row.shape[0]):  # noqa: SIM110 (numba: a plain loop)
        if row[t] == x:
            return True
    return False


@njit(cache=True)
def feasible(M, a, b, c, d):  # pragma: no cover
    """2-opt on (a, b), (c, d) keeps a simple k-regular graph with its self edges.

    Tuple-disjoint (a != c, b != d), neither removed edge is a self edge (a != b, c != d), and
    neither new edge exists already ((a, d) and (c, b) not in the graph).
    """
    if a == c or b == d or a == b or c == d:  # noqa: SIM109 (numba: scalar compares)
        return False
    return not has(M[d], a) and not has(M[b], c)


@njit(cache=True)
def _swap_slot(row, old, new):  # pragma: no cover
    for t in range(row.shape[0]):
        if row[t] == old:
            row[t] = new
            return


@njit(cache=True)
def _scan_numeric(S, C, r):  # pragma: no cover
    """Rescan row ``r``'s k matches for min, second min, max, second max and sum (O(k d))."""
    M, mn1, mn2, mx1, mx2, sm = S[0], S[2], S[3], S[4], S[5], S[6]
    xn = C[0]
    k = M.shape[1]
    for j in range(xn.shape[1]):
        a1, a2, b1, b2, s = np.inf, np.inf, -np.inf, -np.inf, 0.0
        for t in range(k):
            v = xn[M[r, t], j]
            s += v
            if v < a1:
                a2, a1 = a1, v
            elif v < a2:
                a2 = v
            if v > b1:
                b2, b1 = b1, v
            elif v > b2:
                b2 = v
        mn1[r, j], mn2[r, j], mx1[r, j], mx2[r, j], sm[r, j] = a1, a2, b1, b2, s


@njit(cache=True)
def _update_nominal(S, C, r, o, i):  # pragma: no cover
    """Row ``r`` loses match ``o`` and gains ``i``: O(1) per nominal QI (eq. 8 counts)."""
    cnt, ndist, hist, mxc = S[7], S[8], S[9], S[10]
    xc, offs = C[1], C[2]
    for j in range(xc.shape[1]):
        vo, vi = xc[o, j], xc[i, j]
        if vo == vi:
            continue
        p = offs[j] + vo
        c = cnt[r, p]
        hist[r, j, c] -= 1
        hist[r, j, c - 1] += 1
        cnt[r, p] = c - 1
        if c == 1:
            ndist[r, j] -= 1
        if c == mxc[r, j] and hist[r, j, c] == 0:
            mxc[r, j] = c - 1
        p = offs[j] + vi
        c = cnt[r, p]
        hist[r, j, c] -= 1
        hist[r, j, c + 1] += 1
        cnt[r, p] = c + 1
        if c == 0:
            ndist[r, j] += 1
        if c + 1 > mxc[r, j]:
            mxc[r, j] = c + 1


@njit(cache=True)
def apply_move(S, C, a, b, c, d):  # pragma: no cover
    """Replace edges (a, b), (c, d) by (a, d), (c, b) and update the two changed rows."""
    M, W, rowcost = S[0], S[1], S[11]
    _swap_slot(M[b], a, c)
    _swap_slot(M[d], c, a)
    _swap_slot(W[a], b, d)
    _swap_slot(W[c], d, b)
    _scan_numeric(S, C, b)
    _scan_numeric(S, C, d)
    _update_nominal(S, C, b, a, c)
    _update_nominal(S, C, d, c, a)
    rowcost[b] = row_cost(S, C, b)
    rowcost[d] = row_cost(S, C, d)
    removal_bounds(S, C, b)
    removal_bounds(S, C, d)


@njit(cache=True)
def rebuild_all(S, C):  # pragma: no cover
    for r in range(S[0].shape[0]):
        rebuild_row(S, C, r)
