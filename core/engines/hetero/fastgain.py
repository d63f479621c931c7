"""GCP move gains with the b-side prepared once per edge and early exit on the removal bound.

For an edge (a, b) the range of every numeric QI and the number of distinct values of every
nominal QI of row b *without* a are computed once (:func:`prepare`). The gain of replacing (a, b),
(c, d) by (a, d), (c, b) is then ``rem_b - inc_b + rem_d - inc_d``, where ``rem`` is the NCP lost by
removing the outgoing match (:func:`core.engines.hetero.state.removal_bounds`) and ``inc`` the NCP
added by the incoming one (>= 0, GCP is monotone). The sums of ``inc`` stop as soon as the move can
no longer improve. The result equals :func:`core.engines.hetero.state.move_gain` up to rounding
whenever it is positive (tested).
"""

from __future__ import annotations

import numpy as np
from numba import njit

PRUNED = -np.inf


@njit(cache=True, inline="always")
def prepare(S, C, b, a, wo_lo, wo_hi, wo_nd):  # pragma: no cover
    """Row b's per-QI range bounds and distinct counts without its match ``a``."""
    mn1, mn2, mx1, mx2, cnt, ndist = S[2], S[3], S[4], S[5], S[7], S[8]
    xn, xc, offs = C[0], C[1], C[2]
    for j in range(xn.shape[1]):
        v = xn[a, j]
        wo_lo[j] = mn2[b, j] if v == mn1[b, j] else mn1[b, j]
        wo_hi[j] = mx2[b, j] if v == mx1[b, j] else mx1[b, j]
    for j in range(xc.shape[1]):
        wo_nd[j] = ndist[b, j] - (1 if cnt[b, offs[j] + xc[a, j]] == 1 else 0)


@njit(cache=True, inline="always")
def gcp_gain(S, C, a, b, c, d, ra, rd, wo_lo, wo_hi):  # pragma: no cover
    """Gain of the move, or ``PRUNED`` once it provably cannot exceed 0."""
    mn1, mn2, mx1, mx2, cnt = S[2], S[3], S[4], S[5], S[7]
    xn, xc, offs, inv_range, cat_den = C[0], C[1], C[2], C[3], C[4]
    limit = ra + rd
    inc = 0.0
    for j in range(xn.shape[1]):
        x = xn[c, j]
        if x < wo_lo[j]:
            inc += (wo_lo[j] - x) * inv_range[j]
        elif x > wo_hi[j]:
            inc += (x - wo_hi[j]) * inv_range[j]
    for j in range(xc.shape[1]):
        vc = xc[c, j]
        if cnt[b, offs[j] + vc] - (1 if vc == xc[a, j] else 0) == 0:
            inc += cat_den[j]
    if inc >= limit:
        return PRUNED
    gb = ra - inc
    limit = gb + rd
    inc = 0.0
    for j in range(xn.shape[1]):
        vc = xn[c, j]
        lo = mn2[d, j] if vc == mn1[d, j] else mn1[d, j]
        hi = mx2[d, j] if vc == mx1[d, j] else mx1[d, j]
        x = xn[a, j]
        if x < lo:
            inc += (lo - x) * inv_range[j]
        elif x > hi:
            inc += (x - hi) * inv_range[j]
    if inc >= limit:
        return PRUNED
    for j in range(xc.shape[1]):
        va = xc[a, j]
        if cnt[d, offs[j] + va] - (1 if va == xc[c, j] else 0) == 0:
            inc += cat_den[j]
    if inc >= limit:
        return PRUNED
    return gb + rd - inc
