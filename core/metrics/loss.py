"""Information-loss metrics. Each function states its formula and source.

Conventions: ``n`` is the number of input rows, ``d`` the number of QIs. A suppressed row is
treated as fully generalized (cost 1 on every QI) wherever a metric needs a value for it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def precision_loss(levels: np.ndarray | Sequence[int], heights: np.ndarray | list[int]) -> float:
    """Sweeney's precision loss of a full-domain node (KGEN paper eq. 1-2).

    Precision_i = level_i / height_i;  Precision = (1 / N) * sum_i Precision_i, with N QIs.
    0 means no generalization, 1 means every QI at the top. (The KGEN paper calls this value
    "precision" and minimises it; it is 1 minus Sweeney's original precision.)
    """
    lv, h = np.asarray(levels, float), np.asarray(heights, float)
    per = np.divide(lv, h, out=np.zeros_like(lv), where=h > 0)
    return float(per.mean()) if len(per) else 0.0


def loss_metric(cost: np.ndarray, weights: np.ndarray | None = None, suppressed: int = 0) -> float:
    """Weighted loss metric LM (CG paper eq. 1-3; Iyengar's LM as used by ARX).

    ``cost`` is (released rows, d) with per-value loss: categorical (leaves under the generalized
    value - 1) / (leaves in the domain - 1) (eq. 2), ordered (max - min) / (domain max - domain min)
    (eq. 1). IL_weight = sum_a w_a * IL(a) / sum_a w_a (eq. 3), averaged over all n rows, where
    each of the ``suppressed`` rows costs 1.
    """
    d = cost.shape[1]
    w = np.ones(d) if weights is None else np.asarray(weights, float)
    w = w / w.sum()
    n = cost.shape[0] + suppressed
    return float((cost * w).sum() + suppressed) / n if n else 0.0


def per_attribute_loss(cost: np.ndarray, suppressed: int = 0) -> np.ndarray:
    """Mean loss per QI over all rows (suppressed rows cost 1): the CG paper's IL(a)."""
    n = cost.shape[0] + suppressed
    return (cost.sum(axis=0) + suppressed) / n if n else np.zeros(cost.shape[1])


def ncp_numeric(low: np.ndarray, high: np.ndarray, domain_low: float, domain_high: float) -> np.ndarray:
    """NCP_num = (max - min) / (max^j - min^j) (ILS paper eq. 1)."""
    span = domain_high - domain_low
    return (np.asarray(high, float) - np.asarray(low, float)) / span if span > 0 else np.zeros(len(low))


def ncp_categorical(set_sizes: np.ndarray, domain_size: int) -> np.ndarray:
    """NCP_cat = (|values in the generalized set| - 1) / (|domain| - 1) (ILS paper eq. 2)."""
    s = np.asarray(set_sizes, float)
    return (s - 1) / (domain_size - 1) if domain_size > 1 else np.zeros(len(s))


def gcp(ncp: np.ndarray, suppressed: int = 0) -> float:
    """GCP = sum_i NCP(q'_i) / (d * |Q'|) (ILS paper eq. 3-4); ``ncp`` is (rows, d).

    NCP(q'_i) is the sum of the tuple's per-attribute NCPs (eq. 3); suppressed rows count 1 per QI.
    """
    n, d = ncp.shape[0] + suppressed, ncp.shape[1]
    return float(ncp.sum() + suppressed * d) / (d * n) if n and d else 0.0


def sil(num_orig: np.ndarray, num_anon: np.ndarray, cat_orig: np.ndarray, cat_anon: np.ndarray,
        num_std: np.ndarray, cat_std: np.ndarray) -> float:
    """Sum of information loss SIL (ILS paper eq. 5-7, after Sanchez et al.).

    distance_num(q, q') = sqrt(sum_j ((rho_j - rho'_j) / sigma_j)^2) over numeric QIs (eq. 5), where
    rho' is the mean of the values the anonymized tuple covers; distance_cat(q, q') =
    sum_j [tau_j != tau'_j] / sigma_j over categorical QIs (eq. 6; the paper prints ``==``, which
    would reward loss, so we read it as the mismatch indicator), where tau' is the mode;
    SIL = sum_i (distance_num + distance_cat) / (d * |Q'|) (eq. 7). Zero standard deviations are
    replaced by 1.
    """
    n = max(len(num_orig), len(cat_orig))
    d = (num_orig.shape[1] if num_orig.ndim == 2 else 0) + (cat_orig.shape[1] if cat_orig.ndim == 2 else 0)
    if n == 0 or d == 0:
        return 0.0
    total = 0.0
    if num_orig.size:
        s = np.where(np.asarray(num_std, float) > 0, num_std, 1.0)
        total += float(np.sqrt((((num_orig - num_anon) / s) ** 2).sum(axis=1)).sum())
    if cat_orig.size:
        s = np.where(np.asarray(cat_std, float) > 0, cat_std, 1.0)
        total += float(((cat_orig != cat_anon) / s).sum())
    return total / (d * n)


def discernibility(class_sizes: np.ndarray, suppressed: int, n: int) -> float:
    """Discernibility metric DM = sum_E |E|^2 + |S| * n (Bayardo & Agrawal 2005)."""
    return float((np.asarray(class_sizes, float) ** 2).sum() + suppressed * n)


def average_class_size(class_sizes: np.ndarray, k: int) -> float:
    """Normalized average class size C_avg = (released rows / classes) / k (LeFevre et al. 2006)."""
    sizes = np.asarray(class_sizes)
    return float(sizes.sum() / len(sizes) / k) if len(sizes) and k else 0.0


def classification_metric(class_ids: np.ndarray, labels: np.ndarray, suppressed: int) -> float:
    """Classification metric CM (Iyengar 2002): fraction of rows penalized.

    A released row is penalized when its class label differs from its class's majority label; a
    suppressed row is always penalized. CM = (penalized rows) / n.
    """
    n = len(class_ids) + suppressed
    if n == 0:
        return 0.0
    _, cls = np.unique(class_ids, return_inverse=True)
    _, lab = np.unique(labels, return_inverse=True)
    table = np.bincount(cls * (lab.max() + 1) + lab, minlength=(cls.max() + 1) * (lab.max() + 1)) if len(cls) else \
        np.zeros(0)
    if len(cls):
        table = table.reshape(cls.max() + 1, lab.max() + 1)
        minority = int(table.sum() - table.max(axis=1).sum())
    else:
        minority = 0
    return (minority + suppressed) / n


def suppression_rate(suppressed: int, n: int) -> float:
    """Fraction of input rows suppressed."""
    return suppressed / n if n else 0.0
