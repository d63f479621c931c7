"""Per-class checks for k-anonymity, the three l-diversity variants and t-closeness.

Each function takes a contingency table ``counts`` of shape (classes, sensitive values): row ``i``
holds the sensitive-value counts of class ``i``. They are vectorized over classes.
"""

from __future__ import annotations

import numpy as np

from core.privacy.requirement import PrivacyRequirement


def distinct_l(counts: np.ndarray) -> np.ndarray:
    """Number of distinct sensitive values per class."""
    return (counts > 0).sum(axis=1)


def entropy_l(counts: np.ndarray) -> np.ndarray:
    """exp(entropy) per class: the largest l for which the class is entropy l-diverse."""
    sizes = counts.sum(axis=1, keepdims=True)
    p = np.divide(counts, sizes, out=np.zeros_like(counts, dtype=float), where=sizes > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1)
    return np.exp(h)


def recursive_cl_ok(counts: np.ndarray, l: int, c: float) -> np.ndarray:  # noqa: E741
    """Recursive (c, l)-diversity per class: r1 < c * (r_l + r_{l+1} + ... + r_m)."""
    r = -np.sort(-counts, axis=1)
    tail = r[:, l - 1 :].sum(axis=1) if r.shape[1] >= l else np.zeros(len(r))
    return r[:, 0] < c * tail


def recursive_l(counts: np.ndarray, c: float) -> np.ndarray:
    """Largest l for which each class is recursive (c, l)-diverse (0 if none)."""
    r = -np.sort(-counts, axis=1)
    tails = np.cumsum(r[:, ::-1], axis=1)[:, ::-1]  # tails[:, j] = r_j + ... + r_m (0-based j)
    ok = r[:, [0]] < c * tails
    ok[:, 0] = True  # l = 1 is always satisfied by convention
    idx = np.arange(r.shape[1])
    return np.where(ok, idx + 1, 0).max(axis=1)


def emd(counts: np.ndarray, overall: np.ndarray, distance: str = "equal") -> np.ndarray:
    """Earth mover's distance of each class's distribution to ``overall`` (Li et al. 2007).

    ``equal``: 0.5 * sum |p - q|. ``ordered`` (values in their natural order, m values):
    (1 / (m - 1)) * sum_i |sum_{j <= i} (p_j - q_j)|.
    """
    sizes = counts.sum(axis=1, keepdims=True)
    p = np.divide(counts, sizes, out=np.zeros_like(counts, dtype=float), where=sizes > 0)
    q = overall / overall.sum()
    if distance == "equal":
        return 0.5 * np.abs(p - q).sum(axis=1)
    m = counts.shape[1]
    if m < 2:
        return np.zeros(len(counts))
    return np.abs(np.cumsum(p - q, axis=1)).sum(axis=1) / (m - 1)


def class_ok(counts: np.ndarray, req: PrivacyRequirement, overall: np.ndarray | None = None) -> np.ndarray:
    """Boolean per class: does the class satisfy every part of ``req``?"""
    sizes = counts.sum(axis=1)
    ok = sizes >= req.k_min
    if req.l is not None and req.l > 1:
        if req.l_kind == "distinct":
            ok &= distinct_l(counts) >= req.l
        elif req.l_kind == "entropy":
            ok &= entropy_l(counts) >= req.l - 1e-9
        else:
            ok &= recursive_cl_ok(counts, req.l, req.c)
    if req.t is not None:
        base = counts.sum(axis=0) if overall is None else overall
        ok &= emd(counts, base, req.t_distance) <= req.t + 1e-12
    return ok
