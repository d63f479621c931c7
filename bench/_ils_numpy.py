"""A numpy version of the ILS descent (GCP), to measure against the numba kernel.

numpy cannot vectorize the sequential first-improvement loop of Algorithm 2 (each applied move
changes the state the next evaluation reads), so this version vectorizes what it can: for one edge
(a, b) it computes the gains of all candidate moves (c, d) - every partner row d in b's candidate
list times every non-self match c of d - in one batch of array operations, then applies the first
improving one in scan order. The list handling and the move application stay the same
(``apply_move`` is the shared state update). Used only by ``bench/ils_paper.py``.
"""

from __future__ import annotations

import time

import numpy as np

from core.engines.hetero.state import apply_move


def edge_gains(S: tuple[np.ndarray, ...], C: tuple[np.ndarray, ...], a: int, b: int,
               cand_d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gains of every move (a, b), (c, d) for d in ``cand_d``: (gains, c, d); -inf where infeasible."""
    M, mn1, mn2, mx1, mx2, cnt, ndist, rowcost = S[0], S[2], S[3], S[4], S[5], S[7], S[8], S[11]
    xn, xc, offs, inv_range, cat_den = C[0], C[1], C[2], C[3], C[4]
    k = M.shape[1]
    d = np.repeat(cand_d, k - 1)
    c = M[cand_d, 1:].ravel()
    ok = (d != b) & (c != a) & ~(M[d] == a).any(axis=1) & ~(c[:, None] == M[b][None, :]).any(axis=1)
    # b loses a, gains c
    xa, xcn = xn[a], xn[c]
    lo_b = np.where(xa == mn1[b], mn2[b], mn1[b])
    hi_b = np.where(xa == mx1[b], mx2[b], mx1[b])
    new_b = ((np.maximum(hi_b, xcn) - np.minimum(lo_b, xcn)) * inv_range).sum(axis=1)
    va, vc = xc[a], xc[c]
    nd_b = ndist[b] - (cnt[b, offs[:-1] + va] == 1)
    cnt_c_in_b = cnt[b][offs[:-1] + vc] - (vc == va)
    new_b += ((nd_b + (cnt_c_in_b == 0) - 1) * cat_den).sum(axis=1)
    # d loses c, gains a
    lo_d = np.where(xcn == mn1[d], mn2[d], mn1[d])
    hi_d = np.where(xcn == mx1[d], mx2[d], mx1[d])
    new_d = ((np.maximum(hi_d, xa) - np.minimum(lo_d, xa)) * inv_range).sum(axis=1)
    rows = d[:, None]
    nd_d = ndist[d] - (cnt[rows, offs[:-1] + vc] == 1)
    cnt_a_in_d = cnt[rows, offs[:-1] + va] - (va == vc)
    new_d += ((nd_d + (cnt_a_in_d == 0) - 1) * cat_den).sum(axis=1)
    gains = rowcost[b] + rowcost[d] - new_b - new_d
    return np.where(ok, gains, -np.inf), c, d


def numpy_descent(S: tuple[np.ndarray, ...], C: tuple[np.ndarray, ...], cand: np.ndarray, seed: int,
                  time_limit: float) -> dict[str, float]:
    """Algorithm 2 with numpy-vectorized move evaluation; returns counters and elapsed time."""
    rng = np.random.default_rng(seed)
    n, k = S[0].shape
    queue = list(range(n))
    inq = np.ones(n, dtype=bool)
    evals = moves = 0
    started = time.perf_counter()
    while queue and time.perf_counter() - started < time_limit:
        b = queue.pop(int(rng.integers(len(queue))))
        inq[b] = False
        rot = cand[b][np.roll(np.arange(cand.shape[1]), -int(rng.integers(cand.shape[1])))]
        for sa in np.roll(np.arange(1, k), -int(rng.integers(k - 1))):
            a = int(S[0][b, sa])
            gains, c, d = edge_gains(S, C, a, b, rot)
            evals += int(np.isfinite(gains).sum())
            hit = np.flatnonzero(gains > 1e-10)
            if len(hit):
                j = hit[0]
                apply_move(S, C, a, b, int(c[j]), int(d[j]))
                moves += 1
                for r in (b, int(d[j])):
                    if not inq[r]:
                        inq[r] = True
                        queue.append(r)
                break
    return {"evals": evals, "moves": moves, "seconds": time.perf_counter() - started, "done": not queue}
