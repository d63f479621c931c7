"""Property vectors and quality indices of lattice nodes (PBG paper §4, §6 node evaluation, §7).

PAPER: Dewri, Ray, Ray, Whitley, "On the Identification of Property Based Generalizations in
Microdata Anonymization" (DBSec 2010), referred to as "the PBG paper".

Per-tuple properties of a node (after suppression, see below):

* ``P_equiv``: the size of the tuple's equivalence class;
* ``P_sens``: the count of the tuple's sensitive value in its class (the paper's P2, §7);
* ``P_div``: the number of distinct sensitive values in the tuple's class.

Quality indices (one number per node; higher is better for privacy, lower for the losses):

* ``k``  = min P_equiv over released tuples (worst case, §4.1);
* ``l``  = min P_div over released tuples: distinct l-diversity, the paper's worst-case l (§3).
  INTERPRETATION: the issue says "min of the count vector gives l"; the minimum of P_sens is not
  l-diversity, so ``l`` uses the distinct-values property the paper names in §3 and §7;
* ``S_k`` = sum of P_equiv = sum over classes of size^2 (spread index, §4.1 observation);
* ``S_l`` = sum of P_sens = sum over classes and sensitive values of count^2;
* ``GLM`` = Iyengar's general loss metric as a sum over tuples and attributes (paper scale: the
  paper's discretizations of 100..10,000 only make sense for a sum): GLM = n * d * LM, where LM is
  the project's weighted loss metric (``core.metrics.loss_metric``; equal weights give exactly the
  sum of per-value losses); a suppressed tuple costs 1 on every attribute. GLM is rounded to 1e-6
  so that equal losses summed in a different order compare equal;
* ``CM`` = Iyengar's classification metric as a count: released tuples whose class label is not
  the majority label of their class, plus every suppressed tuple (CM * n in the usual scale).

Suppression (§6): with budget eta rows, let E_i be the tuples in classes of size i. Suppress
E_1 .. E_j for the smallest j with |E_1 u .. u E_{j+1}| > eta; then k = j + 1. Suppression depends
on class sizes only (the paper defines it for k); l, S_l and CM are measured on what remains.
INTERPRETATION: suppressed tuples have property value 0 (they are in no released class), so they
add nothing to S_k and S_l; they cost fully in GLM and CM. If eta >= n, only the largest classes
are kept (k = largest class size).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from core.encoding import EncodedBatch
from core.errors import ParamsError
from core.lattice import NodeEvaluator
from core.privacy.requirement import PrivacyRequirement, suppression_budget

# index name -> +1 (maximize) or -1 (minimize)
DIRECTIONS: dict[str, int] = {"k": 1, "l": 1, "S_k": 1, "S_l": 1, "GLM": -1, "CM": -1}
INDEX_NAMES = (*DIRECTIONS, "suppressed")
_ALIASES = {"k": "k", "l": "l", "ℓ": "l", "sk": "S_k", "s_k": "S_k", "sl": "S_l", "s_l": "S_l", "s_ℓ": "S_l",
            "glm": "GLM", "cm": "CM", "suppressed": "suppressed"}


def canonical_index(name: str, allowed: tuple[str, ...] = INDEX_NAMES) -> str:
    """Canonical spelling of a quality index name (case-insensitive, S_k / Sk / s_k all accepted)."""
    key = _ALIASES.get(name.strip().lower().replace("-", "_"))
    if key is None or key not in allowed:
        raise ParamsError(f"unknown quality index '{name}'; valid: {', '.join(allowed)}")
    return key


@dataclass(frozen=True)
class Indices:
    """Quality indices of one node. ``l``/``S_l`` are None without a sensitive attribute, ``CM``
    without a class attribute."""

    levels: tuple[int, ...]
    k: int
    S_k: int
    GLM: float
    suppressed: int
    classes: int
    l: int | None = None  # noqa: E741
    S_l: int | None = None
    CM: int | None = None

    def value(self, name: str) -> float:
        v = getattr(self, name)
        if v is None:
            raise unavailable(name)
        return float(v)

    def vector(self, names: tuple[str, ...]) -> np.ndarray:
        return np.array([self.value(n) for n in names], dtype=np.float64)

    def as_dict(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Evaluation:
    """A node's :class:`Indices` and what pruning learns from it: the distinct rows it suppresses and
    their class sizes, every class's size and distinct sensitive values, and the tuples not in their
    class's majority label over *all* classes (suppressed ones included)."""

    indices: Indices
    rows: np.ndarray
    row_sizes: np.ndarray
    sizes: np.ndarray
    distinct: np.ndarray | None = None
    misclassified: int | None = None


def unavailable(name: str) -> ParamsError:
    why = "the spec has no sensitive attribute" if name in ("l", "S_l") else "no class_attribute was given for CM"
    return ParamsError(f"quality index '{name}' is unavailable: {why}")


def eta_rows(n: int, fraction: float) -> int:
    """Suppression budget in rows (:func:`core.privacy.requirement.suppression_budget`)."""
    return suppression_budget(fraction, n)


def k_under_budget(sizes: np.ndarray, eta: int) -> int:
    """k after suppressing the smallest classes within ``eta`` rows (§6). ``sizes`` > 0."""
    hist = np.bincount(sizes)
    rows = np.cumsum(hist * np.arange(len(hist)))  # rows[s] = tuples in classes of size <= s
    over = np.flatnonzero(rows > eta)
    return int(over[0]) if len(over) else int(sizes.max())


class PropertyEvaluator:
    """Computes :class:`Indices` of lattice nodes of one batch under a suppression budget.

    Class ids come from :class:`core.lattice.NodeEvaluator` (built with l=2 when the batch has a
    sensitive attribute, so the sensitive code is part of its distinct rows). ``labels`` (one per
    input row) enable CM. Not memoized: the search keeps its own cache, so evaluations count
    per run.
    """

    def __init__(self, batch: EncodedBatch, eta: int, labels: np.ndarray | None = None) -> None:
        self.batch, self.eta, self.n, self.d = batch, int(eta), batch.n, batch.d
        sens = batch.sensitive_codes is not None
        self.nodes = NodeEvaluator(batch, PrivacyRequirement(k=1, l=2 if sens else None))
        ev = self.nodes
        self.counts = np.asarray(ev.counts, dtype=np.int64)
        self.inverse = np.asarray(ev.inverse, dtype=np.int64)
        if len(self.inverse) != self.n or not np.array_equal(np.bincount(self.inverse, minlength=len(self.counts)),
                                                             self.counts):
            raise RuntimeError("NodeEvaluator.inverse does not map input rows to its distinct rows")
        m = len(self.counts)
        first = np.empty(m, dtype=np.int64)
        first[self.inverse[::-1]] = np.arange(self.n - 1, -1, -1)
        leaves = batch.leaf_matrix[first]
        self.sens = None if not sens else np.asarray(batch.sensitive_codes)[first].astype(np.int64)
        self.n_sens = 0 if batch.sensitive_labels is None else len(batch.sensitive_labels)  # set with the codes
        w = np.asarray(batch.weights, dtype=np.float64)
        self.w = w / w.sum() if len(w) else w
        # cost[a][lv]: weighted cost of each distinct row's value of QI a at level lv
        self.cost = [[self.w[a] * q.cost[lv][q.maps[lv][leaves[:, a]]] for lv in range(q.height + 1)]
                     for a, q in enumerate(batch.qis)]
        cf = self.counts.astype(np.float64)
        self.level_sum = [[float(cf @ c) for c in per] for per in self.cost]
        self.labels = None
        if labels is not None:
            _, lab = np.unique(np.asarray(labels).astype(str), return_inverse=True)
            n_lab = int(lab.max()) + 1 if len(lab) else 1
            self.labels = np.bincount(self.inverse * n_lab + lab.ravel(),
                                      minlength=m * n_lab).reshape(m, n_lab).astype(np.float64)

    @property
    def heights(self) -> np.ndarray:
        return self.batch.heights

    def available(self) -> tuple[str, ...]:
        out = ["k", "S_k", "GLM", "suppressed"]
        if self.sens is not None:
            out += ["l", "S_l"]
        if self.labels is not None:
            out.append("CM")
        return tuple(out)

    def bounds(self) -> dict[str, float]:
        """Upper bounds K_i of each index (lower bounds are 0), for Theorem 2's archive bound."""
        n = self.n
        return {"k": n, "l": max(self.n_sens, 1), "S_k": n * n, "S_l": n * n, "GLM": n * self.d, "CM": n}

    def gen_loss(self, levels: tuple[int, ...]) -> float:
        """Generalization loss of all rows at ``levels`` (before suppression), from the per-level
        tables: sum over attributes of the weighted loss of its values at that level. No data access."""
        return sum(self.level_sum[a][int(lv)] for a, lv in enumerate(levels))

    def deficit(self, levels: tuple[int, ...], rows: np.ndarray) -> np.ndarray:
        """Per distinct row: multiplicity * (1 - its generalized loss at ``levels``), the GLM a row adds
        (divided by d) when it is suppressed instead of released."""
        rc = np.zeros(len(rows))
        for a, lv in enumerate(levels):
            rc += self.cost[a][int(lv)][rows]
        return self.counts[rows] * np.maximum(1.0 - rc, 0.0)  # rc <= 1 up to rounding

    def glm_lower(self, levels: tuple[int, ...]) -> float:
        """A lower bound on GLM without touching the data: every row at its generalized loss, none
        suppressed (a suppressed row costs 1 >= its generalized loss). Same summation and rounding
        as :meth:`indices`, so GLM >= this bound holds exactly in floating point."""
        return round(self.d * self.gen_loss(levels), 6)

    def indices(self, levels: tuple[int, ...]) -> Indices:
        return self.evaluate(levels).indices

    def evaluate(self, levels: tuple[int, ...]) -> Evaluation:
        """The node's indices plus what :mod:`core.engines.pbg.prune` learns from it."""
        node = tuple(int(x) for x in levels)
        cls, n_cls = self.nodes.class_ids(node)
        cls = np.asarray(cls, dtype=np.int64)
        sizes = np.bincount(cls, weights=self.counts, minlength=n_cls).astype(np.int64)
        used = sizes > 0
        if n_cls > len(sizes[used]):  # compact the id space
            remap = np.cumsum(used) - 1
            cls, sizes = remap[cls], sizes[used]
        k = k_under_budget(sizes, self.eta)
        kept_cls = sizes >= k
        kept_row = kept_cls[cls]
        rows = np.flatnonzero(~kept_row)
        suppressed = int(self.counts[rows].sum())
        ks = sizes[kept_cls]
        gen = self.gen_loss(node)
        extra = float(self.deficit(node, rows).sum()) if suppressed else 0.0
        out: dict[str, object] = {"levels": node, "k": k, "S_k": int((ks * ks).sum()),
                                  "GLM": round(self.d * (gen + extra), 6), "suppressed": suppressed, "classes": len(ks)}
        distinct, misclassified = None, None
        if self.sens is not None:
            joint = np.bincount(cls * self.n_sens + self.sens, weights=self.counts,
                                minlength=len(sizes) * self.n_sens).reshape(len(sizes), self.n_sens)
            distinct = (joint > 0).sum(axis=1)
            out["l"] = int(distinct[kept_cls].min())
            out["S_l"] = int((joint[kept_cls].astype(np.int64) ** 2).sum())
        if self.labels is not None:
            tab = np.stack([np.bincount(cls, weights=self.labels[:, j], minlength=len(sizes))
                            for j in range(self.labels.shape[1])], axis=1)
            wrong = np.rint(tab.sum(axis=1) - tab.max(axis=1)).astype(np.int64)
            out["CM"] = int(wrong[kept_cls].sum()) + suppressed
            misclassified = int(wrong.sum())
        return Evaluation(Indices(**out), rows, sizes[cls[rows]], sizes, distinct, misclassified)  # type: ignore[arg-type]
