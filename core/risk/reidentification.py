"""Record-level re-identification risk models (El Emam 2013; ARX's risk analysis).

All functions take the class sizes ``f_j`` of the released sample (suppressed rows excluded) and,
where a population is involved, the population class sizes ``F_j`` of the same classes. Formulas
and sources are in docs/risk.md.
"""

from __future__ import annotations

import numpy as np

DEFAULT_THRESHOLD = 0.2
"""Prosecutor risk above which a record counts as at risk (ARX's default)."""
RISK_BUCKETS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 1 / 3, 0.5, 1.0)
"""Upper bounds of the prosecutor risk histogram's buckets (right-closed): (0, 1%], (1%, 2%], ..."""


def prosecutor(sizes: np.ndarray, threshold: float) -> dict[str, float]:
    """Prosecutor risk: the attacker knows the person is in the release; risk of a record 1 / f_j.

    ``highest`` = 1 / min f_j, ``average`` = J / n (J classes, n records), ``records_at_risk`` =
    share of records whose risk exceeds ``threshold``.
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    n = sizes.sum()
    if n == 0:
        return {"highest": 0.0, "average": 0.0, "records_at_risk": 0.0}
    return {"highest": float(1.0 / sizes.min()), "average": float(len(sizes) / n),
            "records_at_risk": float(sizes[1.0 / sizes > threshold].sum() / n)}


def journalist(sizes: np.ndarray, population_sizes: np.ndarray, threshold: float) -> dict[str, float]:
    """Journalist risk: the attacker matches against a population register; risk 1 / F_j.

    ``highest`` = 1 / min F_j; ``average`` = max(J / sum F_j, (1/n) sum f_j / F_j) (El Emam's
    success rate, as ARX); ``records_at_risk`` = share of records with 1 / F_j above ``threshold``.
    """
    f = np.asarray(sizes, dtype=np.float64)
    big = np.asarray(population_sizes, dtype=np.float64)
    n = f.sum()
    if n == 0:
        return {"highest": 0.0, "average": 0.0, "records_at_risk": 0.0}
    return {"highest": float(1.0 / big.min()),
            "average": float(max(len(f) / big.sum(), (f / big).sum() / n)),
            "records_at_risk": float(f[1.0 / big > threshold].sum() / n)}


def marketer(sizes: np.ndarray, population_sizes: np.ndarray) -> float:
    """Marketer risk: expected share of records matched correctly when every record is matched,
    (1/n) sum f_j / F_j; J / n when the release is the whole population."""
    f = np.asarray(sizes, dtype=np.float64)
    n = f.sum()
    return 0.0 if n == 0 else float((f / np.asarray(population_sizes, dtype=np.float64)).sum() / n)


def estimated_population_sizes(sizes: np.ndarray, sampling_fraction: float) -> np.ndarray:
    """Plug-in estimate of each class's population size: F_j = f_j / pi (never below f_j)."""
    f = np.asarray(sizes, dtype=np.float64)
    return np.maximum(f, f / sampling_fraction)


def sample_uniques(sizes: np.ndarray) -> float:
    """Share of records that are alone in their class (f_j = 1)."""
    sizes = np.asarray(sizes)
    n = sizes.sum()
    return 0.0 if n == 0 else float((sizes == 1).sum() / n)


def risk_histogram(sizes: np.ndarray) -> list[dict[str, float | int]]:
    """Records per prosecutor-risk bucket (right-closed intervals of :data:`RISK_BUCKETS`)."""
    sizes = np.asarray(sizes, dtype=np.float64)
    risk = 1.0 / sizes if len(sizes) else np.zeros(0)
    edges = np.asarray(RISK_BUCKETS)
    bucket = np.clip(np.searchsorted(edges, risk - 1e-12, side="left"), 1, len(edges) - 1)
    records = np.bincount(bucket, weights=sizes, minlength=len(edges)).astype(np.int64)
    classes = np.bincount(bucket, minlength=len(edges)).astype(np.int64)
    return [{"low": float(edges[i - 1]), "high": float(edges[i]), "records": int(records[i]),
             "classes": int(classes[i])} for i in range(1, len(edges))]
