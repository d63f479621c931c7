"""Report the privacy a partition into classes achieves: k, the three l's and t."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from core.privacy.models import distinct_l, emd, entropy_l, recursive_l


@dataclass(frozen=True)
class PrivacyLevels:
    """Achieved levels over the released (non-suppressed) rows."""

    k: int
    classes: int
    rows: int
    l_distinct: int | None = None
    l_entropy: float | None = None
    l_recursive: int | None = None
    t: float | None = None

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def rank_ids(ids: np.ndarray) -> np.ndarray:
    """``np.unique(ids, return_inverse=True)[1]``: the rank of each id among the distinct ids.

    Ids that are small non-negative integers (class ids usually are) are ranked with one
    ``bincount`` in O(n) instead of a sort.
    """
    ids = np.asarray(ids)
    if ids.dtype.kind in "iu" and len(ids) and ids.min() >= 0 and ids.max() < 4 * len(ids) + 1024:
        present = np.bincount(ids) > 0
        return (np.cumsum(present) - 1)[ids]
    return np.unique(ids, return_inverse=True)[1].ravel()


def contingency(class_ids: np.ndarray, sensitive: np.ndarray, n_classes: int | None = None,
                n_values: int | None = None, weights: np.ndarray | None = None) -> np.ndarray:
    """Counts per (class, sensitive value)."""
    nc = int(class_ids.max()) + 1 if n_classes is None else n_classes
    nv = int(sensitive.max()) + 1 if n_values is None else n_values
    flat = np.bincount(class_ids.astype(np.int64) * nv + sensitive, weights=weights, minlength=nc * nv)
    return flat.reshape(nc, nv)


def achieved(class_ids: np.ndarray, sensitive: np.ndarray | None = None, *, c: float = 2.0,
             t_distance: str = "equal", overall: np.ndarray | None = None) -> PrivacyLevels:
    """Achieved privacy of released rows given their class ids (any integers) and sensitive codes.

    ``overall`` is the sensitive distribution t is measured against (default: the released rows).
    """
    if len(class_ids) == 0:
        return PrivacyLevels(k=0, classes=0, rows=0)
    cls = rank_ids(class_ids)
    sizes = np.bincount(cls)
    if sensitive is None:
        return PrivacyLevels(k=int(sizes.min()), classes=len(sizes), rows=len(class_ids))
    sens = rank_ids(sensitive)
    counts = contingency(cls, sens)
    base = counts.sum(axis=0) if overall is None else overall
    return PrivacyLevels(
        k=int(sizes.min()), classes=len(sizes), rows=len(class_ids),
        l_distinct=int(distinct_l(counts).min()), l_entropy=float(entropy_l(counts).min()),
        l_recursive=int(recursive_l(counts, c).min()), t=float(emd(counts, base, t_distance).max()),
    )
