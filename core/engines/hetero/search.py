"""numba kernels of the ILS paper's local search (Algorithm 2), perturbation and ILS loop (Algorithm 1).

Local search keeps the candidate *list* of Algorithm 2: a set of anonymized rows that may still
improve, initially all rows. A row ``b`` is drawn uniformly at random from it; for each of its
non-self edges (a, b) (in a random rotation) and each candidate row ``d`` (a random rotation of
``b``'s candidate neighbours, or of all rows in the exhaustive neighbourhood), every
tuple-disjoint edge (c, d) is tried; the first move with a positive gain is applied (first
improvement) and ``b`` and ``d`` go back on the list (line 25). A row leaves the list when none of
its moves improves.

Interpretations (the pseudo-code of Algorithms 1-2 is an image missing from the text):

* the "candidate neighbours" of ``b`` restrict the partner row ``d`` of a 2-opt move to the rows
  closest to ``b`` (``cand``; ``cand.shape[1] == 0`` means all rows, as the paper's exhaustive
  exploration); with first improvement this only changes which improving move is found first,
  and a list-empty stop then means "no improving move with a near partner";
* perturbation makes ``n`` random feasible swaps, each between a random row and one of its
  candidate neighbours (swaps between far-apart rows are always undone by the next descent);
* after a perturbation the local search starts from the perturbed rows only (every other row was
  already locally optimal);
* acceptance: the new local optimum replaces the incumbent when its objective is at most
  ``(1 + slack)`` times the incumbent's; otherwise the moves are undone from a log (a 2-opt move
  is its own inverse), so no copy of the state is needed. The best solution is kept separately.

Randomness comes from a splitmix64 stream in a one-element ``uint64`` array seeded by the
engine's numpy Generator, so a run is reproducible for the same seed and iteration budget.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from core.engines.hetero.fastgain import gcp_gain, prepare
from core.engines.hetero.state import GCP, apply_move, feasible, has, move_gain

EPS = 1e-10
# An evaluation budget with no bound, typed int64: a bare ``1 << 62`` passed to local_search types as
# Literal[int], and numba compiled a second copy of local_search for it (about 15 s on a fresh install).
UNBOUNDED = np.int64(1 << 62)


@njit(cache=True)
def _next(rng):  # pragma: no cover
    x = rng[0] + np.uint64(0x9E3779B97F4A7C15)
    rng[0] = x
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True)
def randint(rng, m):  # pragma: no cover
    return np.int64(_next(rng) % np.uint64(m))


@njit(cache=True)
def _push(queue, inq, qlen, r):  # pragma: no cover
    if not inq[r]:
        inq[r] = True
        queue[qlen[0]] = r
        qlen[0] += 1


@njit(cache=True)
def local_search(S, C, cand, queue, inq, qlen, rng, max_evals, log, logn):  # pragma: no cover
    """Run Algorithm 2 until the list is empty, ``max_evals`` moves were considered, or the log is full.

    Returns (moves evaluated, moves applied, total gain); moves skipped by the GCP bound of
    :func:`core.engines.hetero.state.removal_bounds` count towards ``max_evals`` but are not
    evaluated. Applied moves are appended to ``log`` (rows ``a, b, c, d``) when ``log`` has rows;
    the list survives between calls. For GCP the gain comes from :mod:`core.engines.hetero.fastgain`.
    """
    M, rem, remmax = S[0], S[12], S[13]
    n, k = M.shape
    L = cand.shape[1]
    nd = L if L > 0 else n
    evals, moves, total = 0, 0, 0.0
    cap = log.shape[0]
    pruned = 0
    fast = C[7] == GCP
    wo_lo = np.empty(C[0].shape[1])
    wo_hi = np.empty(C[0].shape[1])
    wo_nd = np.empty(C[1].shape[1], dtype=np.int64)
    while qlen[0] > 0 and evals + pruned < max_evals:
        if cap > 0 and logn[0] >= cap:
            break
        idx = randint(rng, qlen[0])
        b = queue[idx]
        qlen[0] -= 1
        queue[idx] = queue[qlen[0]]
        inq[b] = False
        if k < 2:
            continue
        done = False
        s0 = randint(rng, k - 1)
        t0 = randint(rng, nd)
        for ss in range(k - 1):
            sa = 1 + (s0 + ss) % (k - 1)
            a = M[b, sa]
            ra = rem[b, sa]
            if fast:
                prepare(S, C, b, a, wo_lo, wo_hi, wo_nd)
            for tt in range(nd):
                d = cand[b, (t0 + tt) % L] if L > 0 else (t0 + tt) % n
                if d == b or d < 0:
                    continue
                if ra + remmax[d] <= EPS:
                    pruned += k - 1
                    continue
                if has(M[d], a):
                    continue
                for sc in range(1, k):
                    c = M[d, sc]
                    if ra + rem[d, sc] <= EPS:
                        pruned += 1
                        continue
                    if c == a or has(M[b], c):
                        continue
                    evals += 1
                    gain = gcp_gain(S, C, a, b, c, d, ra, rem[d, sc], wo_lo, wo_hi) if fast \
                        else move_gain(S, C, a, b, c, d)
                    if gain > EPS:
                        apply_move(S, C, a, b, c, d)
                        if cap > 0:
                            log[logn[0], 0], log[logn[0], 1], log[logn[0], 2], log[logn[0], 3] = a, b, c, d
                            logn[0] += 1
                        moves += 1
                        total += gain
                        _push(queue, inq, qlen, b)
                        _push(queue, inq, qlen, d)
                        done = True
                        break
                if done:
                    break
            if done:
                break
    return evals, moves, total


@njit(cache=True)
def perturb(S, C, cand, n_swaps, queue, inq, qlen, rng, log, logn):  # pragma: no cover
    """Apply ``n_swaps`` random feasible 2-opt swaps between near rows; returns their total gain."""
    M = S[0]
    n, k = M.shape
    L = cand.shape[1]
    total = 0.0
    if k < 2 or n < 2:
        return total
    done, tries = 0, 0
    while done < n_swaps and tries < 50 * n_swaps + 50:
        tries += 1
        b = randint(rng, n)
        d = cand[b, randint(rng, L)] if L > 0 else randint(rng, n)
        if d < 0:
            continue
        a = M[b, 1 + randint(rng, k - 1)]
        c = M[d, 1 + randint(rng, k - 1)]
        if not feasible(M, a, b, c, d):
            continue
        total += move_gain(S, C, a, b, c, d)
        apply_move(S, C, a, b, c, d)
        log[logn[0], 0], log[logn[0], 1], log[logn[0], 2], log[logn[0], 3] = a, b, c, d
        logn[0] += 1
        _push(queue, inq, qlen, b)
        _push(queue, inq, qlen, d)
        done += 1
    return total


@njit(cache=True)
def ils_iterations(S, C, cand, n_iter, n_swaps, slack, queue, inq, qlen, rng, log, logn,
                   cur, best, best_m, track_best):  # pragma: no cover
    """Run ``n_iter`` ILS iterations (perturb, local search, accept or undo).

    ``cur[0]`` / ``best[0]`` hold the incumbent's and the best objective sums; with ``track_best``
    the best matching is copied into ``best_m`` whenever it improves. Returns
    (iterations, accepted, moves evaluated, moves applied).
    """
    evals, moves, accepted = 0, 0, 0
    M = S[0]
    for _ in range(n_iter):
        logn[0] = 0
        before = cur[0]
        gain = perturb(S, C, cand, n_swaps, queue, inq, qlen, rng, log, logn)
        e, m, g = local_search(S, C, cand, queue, inq, qlen, rng, UNBOUNDED, log, logn)
        while qlen[0] > 0:  # the log filled up: stop this descent here
            qlen[0] -= 1
            inq[queue[qlen[0]]] = False
        evals += e
        moves += m
        after = before - gain - g
        if after <= before + slack * abs(before) + EPS:
            cur[0] = after
            accepted += 1
            if after < best[0] - EPS:
                best[0] = after
                if track_best:  # element by element: a slice assignment pulls in numba's shape-error
                    for i in range(M.shape[0]):  # formatting, ~10 s of compiling on a fresh install
                        for j in range(M.shape[1]):
                            best_m[i, j] = M[i, j]
        else:
            for t in range(logn[0] - 1, -1, -1):
                a, b, c, d = log[t, 0], log[t, 1], log[t, 2], log[t, 3]
                apply_move(S, C, a, d, c, b)
    return n_iter, accepted, evals, moves


@njit(cache=True)
def knn_pairs(xn, xc, wn, wc, jitter, best_d, best_j, worst, worst_t, i0, i1):  # pragma: no cover
    """The pairs (i, j > i) of rows ``i0 <= i < i1`` for :func:`knn_kernel`, resumable: calls over
    consecutive ranges of ``i`` keep exactly the state one call over all rows would."""
    n = xn.shape[0]
    L = best_d.shape[1]
    for i in range(i0, i1):
        for j in range(i + 1, n):
            dist = jitter[i] + jitter[j]
            for a in range(xn.shape[1]):
                dist += abs(xn[i, a] - xn[j, a]) * wn[a]
            for a in range(xc.shape[1]):
                if xc[i, a] != xc[j, a]:
                    dist += wc[a]
            for p, q in ((i, j), (j, i)):
                if dist < worst[p]:
                    best_d[p, worst_t[p]] = dist
                    best_j[p, worst_t[p]] = q
                    w, wt = -1.0, 0
                    for t in range(L):
                        if best_d[p, t] > w:
                            w, wt = best_d[p, t], t
                    worst[p], worst_t[p] = w, wt


@njit(cache=True)
def knn_order(best_d, best_j):  # pragma: no cover
    """Each row's candidates nearest first (the last step of :func:`knn_kernel`)."""
    L = best_d.shape[1]
    for p in range(best_d.shape[0]):
        idx = np.argsort(best_d[p])
        row = best_j[p].copy()
        for t in range(L):  # element by element, as in ils_iterations
            best_j[p, t] = row[idx[t]]
    return best_j


KNN_CHUNK_PAIRS = 2_000_000  # row pairs per knn_pairs call (tens of ms): a Ctrl-C gets in between calls


def knn_kernel(xn, xc, wn, wc, jitter, L):
    """The ``L`` nearest rows of every row under sum_j w_j |x_j - y_j| + sum_j wc_j [x_j != y_j].

    Brute force over all pairs (each pair once), nearest first; ``jitter`` (tiny, random) breaks
    ties. Rows with fewer than ``L`` others get ``-1`` in the unused slots. The pairs are visited in
    chunks of rows (:func:`knn_pairs`), in the order of one pass, so the result is the same.
    """
    n = xn.shape[0]
    best_d = np.full((n, L), np.inf)
    best_j = np.full((n, L), -1, dtype=np.int64)
    worst = np.full(n, np.inf)
    worst_t = np.zeros(n, dtype=np.int64)
    i = 0
    while i < n:
        stop, pairs = i, 0
        while stop < n and pairs < KNN_CHUNK_PAIRS:
            pairs += n - 1 - stop
            stop += 1
        knn_pairs(xn, xc, wn, wc, jitter, best_d, best_j, worst, worst_t, i, stop)
        i = stop
    return knn_order(best_d, best_j)


@njit(cache=True)
def expand_groups(inv, order, starts, groups, L):  # pragma: no cover
    """Candidates per row from nearest groups of identical rows (see ``graph.candidates``).

    Row i takes the other members of its group, then the members of its group's nearest groups in
    order, until ``L`` are found; inside a group the scan starts at a row-dependent offset so that
    duplicates do not all get the same partners. Unused slots are -1.
    """
    n = inv.shape[0]
    out = np.full((n, L), -1, dtype=np.int64)
    for i in range(n):
        got = 0
        g = inv[i]
        for t in range(-1, groups.shape[1]):
            h = g if t < 0 else groups[g, t]
            if h < 0:
                break
            lo, size = starts[h], starts[h + 1] - starts[h]
            off = i % size
            for s in range(size):
                r = order[lo + (off + s) % size]
                if r == i:
                    continue
                out[i, got] = r
                got += 1
                if got == L:
                    break
            if got == L:
                break
    return out
