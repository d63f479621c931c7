"""Block reassignment: an exact, very large neighbourhood for the k-regular anonymization graph.

The move (our addition to the ILS paper's 2-opt, after the assignment construction of Doka et al.,
"k-Anonymization by freeform generalization", ASIACCS 2015, on which the paper builds):

* take a *block* of anonymized rows ``a_1 .. a_B`` that lie close together in QI space;
* each releases one of its non-self matches, ``b_i = M[a_i, s_i]`` (a *slot* ``s_i``);
* give the released originals back by a minimum-cost assignment: ``a_i`` receives ``b_pi(i)``.

Every original keeps its in-degree (it loses one edge and regains one), every anonymized row keeps k
matches and its self match, so the graph stays k-regular whatever the permutation; an assignment
that would give a row a match it already has is forbidden. With the other k - 1 matches of each row
fixed, a row's objective term depends on the received original only, so the assignment cost
``cost[i, t]`` (row a_i's GCP or SIL term after receiving b_t) is *exact*, and the assignment
returned by :func:`scipy.optimize.linear_sum_assignment` is the optimum over all ``B!``
redistributions: every 2-opt move between two rows of the block on their released slots and every
cyclic exchange among them is in the neighbourhood. The identity is a feasible assignment, so a
block move never makes the objective worse.

Blocks come from :class:`core.engines.hetero.blocks.BlockPlanner` (three cuts in rotation), so
successive passes cut the data differently. Slots are the row's costliest removable match (largest
NCP freed by its removal, GCP) or a random non-self match; see :func:`pick_slots`.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit
from scipy.optimize import linear_sum_assignment

from core.engines.hetero.blocks import BlockPlanner

FORBIDDEN = 1e9  # cost of giving a row a match it already has (the identity stays feasible)
KernelConstants = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""The constant arrays of :func:`block_costs`: xn, xc, offs, inv_range, cat_den, inv_std, inv_cstd."""


@njit(cache=True, nogil=True)
def block_costs(M: np.ndarray, excl: np.ndarray, blk: np.ndarray, targets: np.ndarray, xn: np.ndarray,
                xc: np.ndarray, offs: np.ndarray, inv_range: np.ndarray, cat_den: np.ndarray, inv_std: np.ndarray,
                inv_cstd: np.ndarray, objective: int, head: np.ndarray) -> np.ndarray:  # pragma: no cover
    """``cost[i, t]``: row ``blk[i]``'s objective term after receiving ``targets[t]``.

    Row ``blk[i]`` keeps its matches ``M[blk[i], s]`` where ``excl[i, s]`` is False (the released
    slots are excluded) and receives one more.

    ``head`` is an n-long scratch array of -1 (restored on return): the first column holding an
    original, chained through ``nxt`` since two rows may release the same original. Objective 0 is GCP (eq. 3),
    1 is SIL (eq. 5-6, the mode preferring the row's own value on ties, as in
    :mod:`core.engines.hetero.state`).
    """
    nb, nt = blk.shape[0], targets.shape[0]
    k = M.shape[1]
    dn, dc = xn.shape[1], xc.shape[1]
    cost = np.empty((nb, nt))
    cnt = np.zeros(offs[dc], dtype=np.int64)
    lo = np.empty(dn)
    hi = np.empty(dn)
    sm = np.empty(dn)
    base = np.empty(dc)
    maxc = np.empty(dc, dtype=np.int64)
    nxt = np.full(nt, -1, dtype=np.int64)
    for t in range(nt):
        nxt[t] = head[targets[t]]
        head[targets[t]] = t
    for i in range(nb):
        a = blk[i]
        for q in range(dn):
            lo[q] = np.inf
            hi[q] = -np.inf
            sm[q] = 0.0
        kept = 0
        for s in range(k):
            if excl[i, s]:
                continue
            kept += 1
            o = M[a, s]
            for q in range(dn):
                v = xn[o, q]
                lo[q] = min(lo[q], v)
                hi[q] = max(hi[q], v)
                sm[q] += v
            for q in range(dc):
                cnt[offs[q] + xc[o, q]] += 1
        for q in range(dc):
            nd, top = 0, 0
            for p in range(offs[q], offs[q + 1]):
                if cnt[p] > 0:
                    nd += 1
                    top = max(top, cnt[p])
            base[q] = (nd - 1) * cat_den[q]
            maxc[q] = top
        for t in range(nt):
            b = targets[t]
            c = 0.0
            if objective == 0:
                for q in range(dn):
                    v = xn[b, q]
                    c += (max(hi[q], v) - min(lo[q], v)) * inv_range[q]
                for q in range(dc):
                    c += base[q]
                    if cnt[offs[q] + xc[b, q]] == 0:
                        c += cat_den[q]
            else:
                sq = 0.0
                for q in range(dn):
                    z = (xn[a, q] - (sm[q] + xn[b, q]) / (kept + 1)) * inv_std[q]
                    sq += z * z
                c = np.sqrt(sq)
                for q in range(dc):
                    vb = offs[q] + xc[b, q]
                    own = offs[q] + xc[a, q]
                    top = max(maxc[q], cnt[vb] + 1)
                    ownc = cnt[own] + (1 if vb == own else 0)
                    if ownc < top:
                        c += inv_cstd[q]
            cost[i, t] = c
        for s in range(k):
            if excl[i, s]:
                continue
            o = M[a, s]
            p = head[o]
            while p >= 0:
                cost[i, p] = FORBIDDEN
                p = nxt[p]
            for q in range(dc):
                cnt[offs[q] + xc[o, q]] -= 1
    for t in range(nt):
        head[targets[t]] = -1
    return cost


@njit(cache=True, nogil=True)
def removal_gains(M: np.ndarray, xn: np.ndarray, xc: np.ndarray, offs: np.ndarray, inv_range: np.ndarray,
                  cat_den: np.ndarray) -> np.ndarray:  # pragma: no cover
    """``gain[r, s]``: the GCP term row r frees when match ``M[r, s]`` is removed (0 for the self slot)."""
    n, k = M.shape
    dn, dc = xn.shape[1], xc.shape[1]
    gain = np.zeros((n, k))
    cnt = np.zeros(offs[dc], dtype=np.int64)
    mn1 = np.empty(dn)
    mn2 = np.empty(dn)
    mx1 = np.empty(dn)
    mx2 = np.empty(dn)
    for r in range(n):
        for q in range(dn):
            mn1[q] = np.inf
            mn2[q] = np.inf
            mx1[q] = -np.inf
            mx2[q] = -np.inf
        for s in range(k):
            o = M[r, s]
            for q in range(dn):
                v = xn[o, q]
                if v < mn1[q]:
                    mn2[q] = mn1[q]
                    mn1[q] = v
                elif v < mn2[q]:
                    mn2[q] = v
                if v > mx1[q]:
                    mx2[q] = mx1[q]
                    mx1[q] = v
                elif v > mx2[q]:
                    mx2[q] = v
            for q in range(dc):
                cnt[offs[q] + xc[o, q]] += 1
        for s in range(1, k):
            o = M[r, s]
            g = 0.0
            for q in range(dn):
                v = xn[o, q]
                if v == mn1[q]:
                    g += (mn2[q] - mn1[q]) * inv_range[q]
                if v == mx1[q]:
                    g += (mx1[q] - mx2[q]) * inv_range[q]
            for q in range(dc):
                if cnt[offs[q] + xc[o, q]] == 1:
                    g += cat_den[q]
            gain[r, s] = g
        for s in range(k):
            o = M[r, s]
            for q in range(dc):
                cnt[offs[q] + xc[o, q]] -= 1
    return gain


def pick_slots(M: np.ndarray, blk: np.ndarray, gains: np.ndarray | None, rng: np.random.Generator) -> np.ndarray:
    """A non-self slot per row of ``blk``: the costliest removable match (``gains``), else at random.

    Ties in gain (frequent: most matches free nothing) break at random.
    """
    k = M.shape[1]
    if gains is None:
        return rng.integers(1, k, size=len(blk))
    g = gains[blk, 1:] + rng.random((len(blk), k - 1)) * 1e-12
    return 1 + np.argmax(g, axis=1)


def reassign_block(M: np.ndarray, blk: np.ndarray, slots: np.ndarray, consts: KernelConstants, objective: int,
                   head: np.ndarray) -> float:
    """Apply the optimal redistribution of ``blk``'s released matches; return the objective gain (>= 0)."""
    targets = M[blk, slots].copy()
    excl = np.zeros((len(blk), M.shape[1]), dtype=np.bool_)
    excl[np.arange(len(blk)), slots] = True
    cost = block_costs(M, excl, blk, targets, *consts, objective, head)
    rows, cols = linear_sum_assignment(cost)
    before = float(np.trace(cost))
    after = float(cost[rows, cols].sum())
    if after >= before - 1e-12 or after >= FORBIDDEN:
        return 0.0
    M[blk[rows], slots[rows]] = targets[cols]
    return before - after


def construct(n: int, k: int, planner: BlockPlanner, consts: KernelConstants, objective: int, rng: np.random.Generator,
              deadline: float = np.inf) -> np.ndarray | None:
    """A k-regular matching built layer by layer by block assignment (Doka et al.'s construction).

    Layer 0 is the identity (every row generalizes itself); layer j gives every row one more match
    by a minimum-cost assignment of each block onto itself (blocks re-drawn per layer by the
    planner's rotation), a row's cost counting the j matches it already has. A block of s >= 2(k - 1)
    rows always admits such an assignment: each row forbids at most j <= k - 1 <= s / 2 of the
    block's rows and each row is forbidden by at most j rows, so the allowed bipartite graph has
    minimum degree >= s / 2 and therefore a perfect matching. Returns None when n < 2(k - 1) or
    the ``deadline`` (a ``time.perf_counter`` value) passes first.
    """
    if k < 2 or n < max(2 * (k - 1), k):
        return None
    M = np.empty((n, k), dtype=np.int64)
    M[:, 0] = np.arange(n)
    head = np.full(n, -1, dtype=np.int64)
    for j in range(1, k):
        if time.perf_counter() > deadline:
            return None
        blocks = planner.next(rng)[1]
        covered = np.bincount(np.concatenate(blocks), minlength=n) if blocks else np.zeros(n, dtype=np.int64)
        if len(covered) != n or (covered != 1).any():  # unassigned rows would keep garbage matches
            raise RuntimeError("block planner did not partition the rows")
        for blk in blocks:
            excl = np.zeros((len(blk), k), dtype=np.bool_)
            excl[:, j:] = True
            cost = block_costs(M, excl, blk, blk, *consts, objective, head)
            rows, cols = linear_sum_assignment(cost)
            if cost[rows, cols].max() >= FORBIDDEN:  # cannot happen for blocks of >= 2(k - 1) rows
                return None
            M[blk[rows], j] = blk[cols]
    return M
