"""k-regular anonymization graphs: from a homogeneous clustering (§5.5), inverse, candidates."""

from __future__ import annotations

import numpy as np

from core.engines.hetero.data import HeteroData
from core.engines.hetero.search import expand_groups, knn_kernel
from core.errors import InfeasibleError


def regular_from_clusters(cls: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Turn a clustering with every cluster of size >= k into a k-regular matching ``M`` (n, k).

    A cluster of exactly k rows is the complete bipartite graph K_{k,k} and is kept (§5.5, first
    case). A cluster of s > k rows is K_{s,s}, which is s-regular; the paper removes s - k perfect
    matchings from it ("remove an edge and an augmenting path", |c| - k times). We remove the
    perfect matchings "shift by k, ..., s-1" of a uniformly random ordering p_0..p_{s-1} of the
    cluster, so anonymized row p_j generalizes p_j, p_{j+1}, ..., p_{j+k-1} (indices mod s): every
    row keeps its self edge and the result is k-regular. ``M[i, 0] == i``.
    """
    cls = np.asarray(cls)
    n = len(cls)
    _, cid, sizes = np.unique(cls, return_inverse=True, return_counts=True)
    if len(sizes) and sizes.min() < k:
        raise InfeasibleError(f"a cluster has {int(sizes.min())} rows, fewer than k={k}")
    order = np.lexsort((rng.random(n), cid))  # rows grouped by cluster, random order inside
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    csorted = cid[order]
    pos = np.arange(n) - start[csorted]
    s = sizes[csorted]
    shifts = (pos[:, None] + np.arange(k)[None, :]) % s[:, None]
    matches = np.empty((n, k), dtype=np.int64)
    matches[order] = order[start[csorted][:, None] + shifts]
    return matches


def inverse(matches: np.ndarray) -> np.ndarray:
    """``W`` (n, k): the anonymized rows generalizing each original row, its own row first."""
    n, k = matches.shape
    b = np.repeat(np.arange(n), k)
    a = matches.ravel()
    counts = np.bincount(a, minlength=n)
    if len(counts) != n or (counts != k).any():
        raise ValueError("matching is not k-regular")
    order = np.lexsort((b, b != a, a))
    return b[order].reshape(n, k)


def candidates(data: HeteroData, size: int, objective: str, rng: np.random.Generator) -> np.ndarray:
    """The ``size`` nearest rows of each row (record distance of ``HeteroData.pair_weights``).

    Exact duplicates are grouped first, so the O(U^2 d) brute force runs over the U distinct rows
    (census-like tables repeat many rows); a row's candidates are then the other members of its own
    group followed by the members of the nearest groups, in order of distance. ``size == 0`` gives
    an empty (n, 0) array: the local search then scans every row.
    """
    n = data.n
    size = min(size, n - 1)
    if size <= 0:
        return np.zeros((n, 0), dtype=np.int64)
    wn, wc = data.pair_weights(objective)
    w = np.concatenate([wn, wc])
    scale = float(w[w > 0].min(initial=1.0))
    table = np.concatenate([data.xn, data.xc.astype(np.float64)], axis=1)
    _, first, inv = np.unique(table, axis=0, return_index=True, return_inverse=True)
    inv = inv.ravel()
    u = len(first)
    groups = np.zeros((u, 0), dtype=np.int64)
    if u > 1:
        jitter = rng.random(u) * 1e-9 * scale
        groups = knn_kernel(np.ascontiguousarray(data.xn[first]), np.ascontiguousarray(data.xc[first]),
                            np.ascontiguousarray(wn, dtype=np.float64), np.ascontiguousarray(wc, dtype=np.float64),
                            jitter, min(size, u - 1))
    order = np.argsort(inv, kind="stable").astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(np.bincount(inv, minlength=u))]).astype(np.int64)
    return expand_groups(inv.astype(np.int64), order, starts, groups, size)
