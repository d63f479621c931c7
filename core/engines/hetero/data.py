"""QI values as arrays for the hierarchy-free engines (k-member, l-greedy, ILS).

No generalization hierarchy is used beyond the value domains:

* ``numeric`` QIs (and ``date`` QIs, as days) are *ordered*: a group of values generalizes to the
  closed range ``[min-max]``; NCP_num = (max - min) / (max^j - min^j) (ILS paper eq. 1), where the
  domain bounds are the minimum and maximum of the batch ("in the entire dataset", §3.1);
* ``categorical`` and ``masked`` QIs are *nominal*: a group generalizes to the set of its values;
  NCP_cat = (|set| - 1) / (|domain| - 1) (eq. 2), where the domain is the distinct values of the
  batch (the dummy variables of §3.1 exist only for values that occur).

SIL (eq. 5-7) divides by a standard deviation per attribute. For numeric QIs it is the population
standard deviation of the batch. The paper does not say what the standard deviation of a nominal
attribute is; we use the nominal dispersion of Domingo-Ferrer and Sánchez, sigma = sqrt(share of
rows that differ from the column's mode). A zero sigma is replaced by 1 (as in core.metrics.sil).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.encoding import EncodedBatch
from core.errors import InputDataError, preview

ORDERED_KINDS = ("numeric", "date")


@dataclass(frozen=True, eq=False)
class HeteroData:
    """The batch's QIs split into an ordered (float) block and a nominal (code) block."""

    num_names: tuple[str, ...]
    num_kinds: tuple[str, ...]
    cat_names: tuple[str, ...]
    xn: np.ndarray  # (n, dn) float64 values (dates as days since the epoch)
    xc: np.ndarray  # (n, dc) int64 codes, code v of QI j is cat_values[j][v]
    cat_values: tuple[np.ndarray, ...]  # per nominal QI, the sorted distinct values (str)
    num_low: np.ndarray  # (dn,) domain minimum
    num_high: np.ndarray  # (dn,) domain maximum
    num_std: np.ndarray  # (dn,) sigma used by SIL (never 0)
    cat_std: np.ndarray  # (dc,) sigma used by SIL (never 0)
    cat_weight: np.ndarray | None = None  # (dc,) cost of one more distinct value, instead of 1 / (|domain| - 1)

    @property
    def n(self) -> int:
        return int(self.xn.shape[0])

    @property
    def dn(self) -> int:
        return int(self.xn.shape[1])

    @property
    def dc(self) -> int:
        return int(self.xc.shape[1])

    @property
    def d(self) -> int:
        return self.dn + self.dc

    @property
    def cat_sizes(self) -> np.ndarray:
        return np.array([len(v) for v in self.cat_values], dtype=np.int64)

    @property
    def cat_offsets(self) -> np.ndarray:
        """Start of each nominal QI's block in a flat per-value count array."""
        return np.concatenate([[0], np.cumsum(self.cat_sizes)]).astype(np.int64)

    @property
    def inv_range(self) -> np.ndarray:
        span = self.num_high - self.num_low
        return np.divide(1.0, span, out=np.zeros_like(span), where=span > 0)

    @property
    def cat_den(self) -> np.ndarray:
        """1 / (|domain| - 1) per nominal QI (0 for a one-value domain), or ``cat_weight`` when given."""
        if self.cat_weight is not None:
            return self.cat_weight
        m = self.cat_sizes.astype(np.float64)
        return np.divide(1.0, m - 1, out=np.zeros_like(m), where=m > 1)

    @property
    def qi_order(self) -> list[str]:
        return list(self.num_names) + list(self.cat_names)

    def pair_weights(self, objective: str) -> tuple[np.ndarray, np.ndarray]:
        """Per-attribute weights of the record distance used to pick neighbours and seeds.

        For GCP a numeric difference costs |x - y| / range and a nominal mismatch 1 / (|domain| - 1)
        (the NCP of generalizing the pair); for SIL the numeric scale is 1 / sigma and a mismatch
        costs 1 / sigma_cat.
        """
        if objective == "sil":
            return 1.0 / self.num_std, 1.0 / self.cat_std
        return self.inv_range, self.cat_den


def _nominal_sigma(codes: np.ndarray) -> float:
    if len(codes) == 0:
        return 1.0
    share = 1.0 - np.bincount(codes).max() / len(codes)
    return float(np.sqrt(share)) if share > 0 else 1.0


def hetero_data(batch: EncodedBatch, sets: bool = True) -> HeteroData:
    """Split the batch's QIs into ordered values and nominal codes (see the module docstring).

    ``sets``: the release writes set labels ``{a,b}`` (``bands = "free"``), so values holding ``,``
    or starting with ``{`` are refused."""
    spec = batch.schema.spec
    num_names, num_kinds, cols = [], [], []
    cat_names, codes, values = [], [], []
    for q, enc in zip(spec.qi, batch.qis, strict=True):
        kind = q.type.value
        if kind in ORDERED_KINDS and enc.leaf_values is not None:
            num_names.append(q.name)
            num_kinds.append(kind)
            cols.append(np.asarray(enc.leaf_values, dtype=np.float64)[enc.codes])
        else:
            raw = batch.frame[q.name].astype(str).str.strip()
            bad = raw[raw.str.contains(",", regex=False) | raw.str.startswith("{")].unique().tolist() if sets else []
            if bad:
                raise InputDataError(
                    f"column '{q.name}' has values that cannot be written in a set label "
                    f"(',' or a leading '{{'): {preview(bad)}")
            c, uniq = pd.factorize(raw, sort=True)
            cat_names.append(q.name)
            codes.append(c.astype(np.int64))
            values.append(np.asarray(uniq, dtype=object))
    n = batch.n
    xn = np.stack(cols, axis=1) if cols else np.zeros((n, 0))
    return _assemble(n, xn, codes, num_names, num_kinds, cat_names, values,
                     xn.min(axis=0) if n else np.zeros(0), xn.max(axis=0) if n else np.zeros(0))


def _assemble(n: int, xn: np.ndarray, codes: list[np.ndarray], num_names: list[str], num_kinds: list[str],
              cat_names: list[str], values: list[np.ndarray], low: np.ndarray, high: np.ndarray,
              weights: list[float] | None = None) -> HeteroData:
    """The :class:`HeteroData` of numeric columns ``xn`` and nominal ``codes`` (spreads from the data)."""
    xc = np.stack(codes, axis=1) if codes else np.zeros((n, 0), dtype=np.int64)
    std = xn.std(axis=0) if n else np.ones(xn.shape[1])
    return HeteroData(
        num_names=tuple(num_names), num_kinds=tuple(num_kinds), cat_names=tuple(cat_names), xn=xn, xc=xc,
        cat_values=tuple(values), num_low=low, num_high=high, num_std=np.where(std > 0, std, 1.0),
        cat_std=np.array([_nominal_sigma(xc[:, j]) for j in range(xc.shape[1])], dtype=np.float64),
        cat_weight=None if weights is None else np.asarray(weights, dtype=np.float64),
    )


def nested_data(batch: EncodedBatch, free: frozenset[str] = frozenset()) -> HeteroData:
    """The search's view of the batch for ``bands = "nested"``: the loss of a group approximates the
    cost of the hierarchy nodes its labels will be, so the kernels keep groups inside nodes.

    Each QI becomes one nominal column per level below its top, holding the row's node at that
    level; one more distinct node at level ``l`` costs the rise in mean node cost from level ``l``
    to ``l + 1`` (so a group whose lowest common node is at level L pays about that node's cost).
    Ordered QIs keep their value (range over the hierarchy's domain) instead of the leaf level,
    which spreads the cost of a group within its band. Used only to choose groups: the released
    labels and losses are the nodes' (:mod:`core.hierarchies.nodes`).

    QIs named in ``free`` (the per-QI fallback, :mod:`core.engines.hetero.fallback`) are released as
    free ranges / sets, so the search sees their free loss: an ordered QI only its value, a nominal
    one its leaf with 1 / (leaves - 1) per extra distinct value."""
    num_cols, low, high, num_names, num_kinds = [], [], [], [], []
    codes, values, weights, names = [], [], [], []
    for q in batch.qis:
        first = 0
        if q.kind in ORDERED_KINDS and q.leaf_values is not None and q.domain is not None:
            num_cols.append(np.asarray(q.leaf_values, dtype=np.float64)[q.codes])
            low.append(float(q.domain[0]))
            high.append(max(float(q.domain[1]), float(q.domain[0]) + 1e-12))
            num_names.append(q.name)
            num_kinds.append(q.kind)
            first = 1
        if q.name in free:
            if not first:
                codes.append(q.at(0).astype(np.int64))
                values.append(np.arange(q.n_codes(0)).astype(str).astype(object))
                weights.append(1.0 / max(q.n_leaves - 1, 1))
                names.append(q.name)
            continue
        rows_at = [q.at(lvl) for lvl in range(q.height + 1)]
        mean_cost = [float(q.cost[lvl][rows_at[lvl]].mean()) if batch.n else 0.0 for lvl in range(q.height + 1)]
        for lvl in range(first, q.height):
            codes.append(rows_at[lvl].astype(np.int64))
            values.append(np.arange(q.n_codes(lvl)).astype(str).astype(object))
            weights.append(max(mean_cost[lvl + 1] - mean_cost[lvl], 1e-6))
            names.append(f"{q.name}@{lvl}")
    n = batch.n
    xn = np.stack(num_cols, axis=1) if num_cols else np.zeros((n, 0))
    return _assemble(n, xn, codes, num_names, num_kinds, names, values, np.asarray(low, dtype=np.float64),
                     np.asarray(high, dtype=np.float64), weights)
