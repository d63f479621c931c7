"""KGEN lattice preprocessing (paper §3.2, with the suppression issue of §7) and shared helpers.

Used by the ``kgen`` and ``random`` engines (De Pascale et al., "Real-world K-Anonymity
Applications: the KGEN approach and its evaluation in Fraudulent Transactions").

§3.2 slices the data into one single-attribute table per QI and, for each, finds the lowest level
at which that table alone is k-anonymous; those levels become the new bottom of the lattice.
§7 admits that this loses solutions once suppression is allowed: the minimum found without
suppression is no lower bound of the nodes that are feasible *with* suppression (Table 8).

What we do (``preprocessing`` parameter):

* ``suppression-aware`` (default): the bound of QI ``a`` is the lowest level at which the
  single-attribute table fails on at most the allowed number of rows (the same suppression
  budget as the whole run). This is a sound lower bound, so no feasible node is cut away:
  a class of the single-attribute table at level ``N[a]`` is a union of classes of node ``N``;
  for k-anonymity (and distinct l-diversity) a union that contains a passing class passes, so every
  row the single-attribute table suppresses is also suppressed at ``N``, and
  ``suppressed_a(N[a]) <= suppressed(N) <= budget``. Since suppression is monotone along a
  hierarchy, every feasible ``N`` has ``N[a] >= bound[a]``. For entropy / recursive l-diversity
  the argument only holds without suppression (a mixture of a passing and a failing class may
  fail), and t-closeness is not monotone at all; in those cases the bounds are not applied
  (all 0) and the diagnostics say why.
* ``paper``: the literal §3.2 rule (k-anonymous without any suppression), kept for comparison;
  with ``max_suppression > 0`` it may exclude the optimum, exactly as §7 warns.
* ``none``: the whole lattice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from core.encoding import EncodedBatch
from core.lattice import NodeResult
from core.privacy import PrivacyRequirement, class_ok

Preprocessing = Literal["suppression-aware", "paper", "none"]


@dataclass(frozen=True)
class Bounds:
    """The (reduced) search box: ``low <= levels <= high`` component-wise."""

    low: np.ndarray
    high: np.ndarray
    mode: str
    note: str = ""

    @property
    def size(self) -> int:
        return int(np.prod(self.high - self.low + 1, dtype=object))

    @property
    def free(self) -> np.ndarray:
        """Indices of the QIs whose level can still vary."""
        return np.flatnonzero(self.high > self.low)

    def random_node(self, rng: np.random.Generator) -> tuple[int, ...]:
        return tuple(int(x) for x in rng.integers(self.low, self.high + 1))

    def as_dict(self, names: list[str]) -> dict[str, Any]:
        return {"mode": self.mode, "note": self.note, "low": dict(zip(names, self.low.tolist(), strict=True)),
                "reduced_lattice_size": float(self.size) if self.size > 2**53 else self.size}


def single_attribute_suppressed(batch: EncodedBatch, req: PrivacyRequirement, a: int, level: int,
                                overall: np.ndarray | None) -> int:
    """Rows that fail ``req`` in the table holding only QI ``a`` generalized to ``level``."""
    q = batch.qis[a]
    codes, n_cls = q.at(level), q.n_codes(level)
    sizes = np.bincount(codes, minlength=n_cls)
    if req.needs_sensitive and batch.sensitive_codes is not None:
        assert batch.sensitive_labels is not None  # set with sensitive_codes
        n_s = len(batch.sensitive_labels)
        table = np.bincount(codes.astype(np.int64) * n_s + batch.sensitive_codes, minlength=n_cls * n_s)
        fail = ~class_ok(table.reshape(n_cls, n_s), req, overall)
    else:
        fail = sizes < req.k_min
    return int(sizes[fail & (sizes > 0)].sum())


def sound_with_suppression(req: PrivacyRequirement) -> str | None:
    """Why suppression-aware bounds would be unsound for ``req``, or None if they are sound."""
    if req.t is not None:
        return "t-closeness is not monotone under merging classes; lattice not reduced"
    if req.l is not None and req.l > 1 and req.l_kind != "distinct" and req.max_suppression > 0:
        return (f"{req.l_kind} l-diversity with suppression: a merged class may fail; lattice not reduced")
    return None


def lattice_bounds(batch: EncodedBatch, req: PrivacyRequirement, mode: Preprocessing) -> Bounds:
    """Per-QI minimum levels (KGEN §3.2) under the chosen handling of suppression."""
    high = batch.heights.astype(np.int64).copy()
    low = np.zeros(batch.d, dtype=np.int64)
    if mode == "none":
        return Bounds(low, high, mode, "whole lattice")
    if mode == "suppression-aware":
        why = sound_with_suppression(req)
        if why is not None:
            return Bounds(low, high, mode, why)
        budget = req.max_suppressed_rows(batch.n)
        note = f"per-QI minimum with at most {budget} rows failing (sound lower bound)"
    else:
        budget = 0
        note = "per-QI minimum without suppression (paper §3.2; may exclude solutions, see §7)"
    overall = None
    if req.needs_sensitive and batch.sensitive_codes is not None:
        assert batch.sensitive_labels is not None  # set with sensitive_codes
        overall = np.bincount(batch.sensitive_codes, minlength=len(batch.sensitive_labels)).astype(float)
    for a in range(batch.d):
        level = int(high[a])
        for lv in range(int(high[a]) + 1):
            if single_attribute_suppressed(batch, req, a, lv, overall) <= budget:
                level = lv
                break
        low[a] = level
    return Bounds(low, high, mode, note)


def rank_key(res: NodeResult) -> tuple[Any, ...]:
    """Total order of candidate nodes: feasible first, then loss, precision, height, levels.

    Feasible nodes follow the ``exhaustive`` engine's tie-break (loss, then height, then level
    vector). Infeasible nodes rank by how many rows they would suppress (closeness to
    feasibility), then the same keys, so a search climbs towards the feasible region.
    """
    tail = (round(res.loss, 12), round(res.gen_loss, 12), sum(res.levels), res.levels)
    return (0, 0, *tail) if res.feasible else (1, res.suppressed, *tail)


def attribute_loss(batch: EncodedBatch, levels: tuple[int, ...], metrics: dict[str, Any],
                   rows: Any) -> dict[str, dict[str, Any]]:
    """The per-attribute information-loss metadata KGEN returns with its output (paper §6).

    Per QI: the level and hierarchy height, the precision term level / height (eq. 1), the mean
    loss-metric cost over all rows with suppressed rows costing 1, and distinct values before and
    after generalization (released rows).
    """
    per = metrics.get("per_attribute_loss", {})
    out: dict[str, dict[str, Any]] = {}
    for q, lv in zip(batch.qis, levels, strict=True):
        out[q.name] = {
            "level": int(lv), "height": int(q.height),
            "precision": round(lv / q.height, 6) if q.height else 0.0,
            "loss": per.get(q.name),
            "distinct_original": len(np.unique(q.codes)),
            "distinct_released": int(rows[q.name].nunique()) if len(rows) else 0,
        }
    return out
