"""Fast evaluation of lattice nodes on encoded data.

The batch is first compressed to its distinct rows (leaf codes of every QI, plus the sensitive
code when the requirement needs it) with multiplicities. A node is evaluated by mapping those
distinct rows to the node's levels, combining the codes into one int64 key per row and counting
class sizes with ``bincount`` (dense key space) or hash factorization. Suppression removes every
row of a class that fails the requirement; a node is feasible when at most the allowed number of
rows is suppressed; with an ``avg_risk`` bound the kept classes / kept rows must also stay within it.

Loss models (both average over records and attributes, a suppressed record costs 1 everywhere):

- ``lm``: the loss metric, weighted per attribute (CG paper eq. 1-3; ARX's loss): a generalized
  value costs (leaves under it - 1) / (leaves - 1), or (high - low) / (domain span) if ordered.
- ``precision``: Sweeney's precision (KGEN paper eq. 1-2): level / height per attribute, unweighted.

``gen_loss`` is the loss without the suppression penalty. It only depends on the levels, is additive over
attributes, never exceeds ``loss`` and is monotone along the lattice order: an admissible bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from core.encoding import EncodedBatch
from core.lattice.backend import SWITCH_WORK, Backend, starting_backend
from core.lattice.rollups import RollUps
from core.lattice.suppression import failing_code_counts, suppression_extra, suppression_extra_matrix
from core.lattice.tables import MAX_KEY, combined_classes, distinct_rows
from core.privacy.models import class_ok
from core.privacy.requirement import PrivacyRequirement

LossName = Literal["lm", "precision"]


@dataclass(frozen=True)
class NodeResult:
    levels: tuple[int, ...]
    feasible: bool
    suppressed: int
    classes: int
    k: int
    loss: float
    gen_loss: float


class NodeEvaluator:
    """Evaluate lattice nodes of one encoded batch under one requirement, with memoization."""

    def __init__(self, batch: EncodedBatch, req: PrivacyRequirement, loss: LossName = "lm",
                 backend: Backend = "auto") -> None:
        """``backend``: "auto" starts on numpy, moves to the numba kernels when they pay (core/lattice/backend.py)."""
        self.batch, self.req, self.loss_name, self.requested = batch, req, loss, backend
        self.backend, self.numpy_work = starting_backend(backend), 0
        # nodes a feasibility probe found beyond (probed) or within (within) the budget, not evaluated whole
        self.probed: set[tuple[int, ...]] = set()
        self.within: set[tuple[int, ...]] = set()
        self.n = batch.n
        self.heights = batch.heights
        self.max_suppressed = req.max_suppressed_rows(self.n)
        cols = [batch.leaf_matrix]
        self.with_sensitive = req.needs_sensitive
        if self.with_sensitive:
            if batch.sensitive_codes is None:
                raise ValueError("the requirement needs a sensitive attribute but the spec has none")
            cols.append(batch.sensitive_codes[:, None])
        uniq, self.counts, self.inverse = distinct_rows(np.concatenate(cols, axis=1))
        self.counts = self.counts.astype(np.int64)
        self.sens = uniq[:, -1] if self.with_sensitive else None
        labels, codes = batch.sensitive_labels, batch.sensitive_codes  # both set or both None
        self.n_sens = len(labels) if self.with_sensitive and labels is not None else 0
        self.overall = (np.bincount(codes, minlength=self.n_sens).astype(float)
                        if self.with_sensitive and codes is not None else None)
        if loss == "lm":
            self.weights = batch.weights / batch.weights.sum()
            costs = [q.cost for q in batch.qis]
        else:
            self.weights = np.full(batch.d, 1.0 / max(batch.d, 1))
            costs = [tuple(np.full(q.n_codes(lv), lv / q.height if q.height else 0.0) for lv in range(q.height + 1))
                     for q in batch.qis]
        # Per attribute and level: codes of the distinct rows, and per-code cost.
        self.codes = [[q.maps[lv][uniq[:, a]] for lv in range(q.height + 1)] for a, q in enumerate(batch.qis)]
        self.ncodes = [[q.n_codes(lv) for lv in range(q.height + 1)] for q in batch.qis]
        self.costs = costs
        weights_f = self.counts.astype(np.float64)
        self.level_mean = [
            np.array([float((weights_f * costs[a][lv][self.codes[a][lv]]).sum()) / self.n
                      for lv in range(q.height + 1)])
            for a, q in enumerate(batch.qis)
        ]
        self.cache: dict[tuple[int, ...], NodeResult] = {}
        self._bound_terms: list[list[float]] | None = None
        self._packed: tuple[np.ndarray, np.ndarray] | None = None
        self.bottom_tab = np.ascontiguousarray(uniq, dtype=np.int32)
        self.rollups = RollUps(batch, self.bottom_tab, self.counts, self.ncodes,
                               self.n_sens if self.with_sensitive else None)

    def _pack(self) -> tuple[np.ndarray, np.ndarray]:
        """Dense (d, levels, m) code cube and (d, levels, codes) cost cube for the kernels."""
        if self._packed is None:
            d, m = self.batch.d, len(self.counts)
            hmax = int(self.heights.max()) + 1 if d else 1
            cmax = max((max(nc) for nc in self.ncodes), default=1)
            cube = np.zeros((d, hmax, m), dtype=np.int64)
            cost = np.zeros((d, hmax, cmax), dtype=np.float64)
            for a in range(d):
                for lv, codes in enumerate(self.codes[a]):
                    cube[a, lv] = codes
                    cost[a, lv, : len(self.costs[a][lv])] = self.costs[a][lv]
            self._packed = (cube, cost)
        return self._packed

    def _radix(self, levels: tuple[int, ...], with_sens: bool = False) -> np.ndarray | None:
        """Mixed-radix multipliers for the node's code counts, or None if the key overflows."""
        sizes = [self.ncodes[a][lv] for a, lv in enumerate(levels)]
        if with_sens and self.with_sensitive:
            sizes.append(self.n_sens)
        radix = np.empty(len(sizes), dtype=np.int64)
        total = 1
        for a, size in enumerate(sizes):
            radix[a] = total
            total *= size
            if total >= MAX_KEY:
                return None
        return radix

    def node_costs(self, levels: tuple[int, ...]) -> np.ndarray:
        """(d, codes) matrix: QI a's cost of each code at ``levels[a]``, 0 past its last code."""
        cost = self._pack()[1]
        return cost[np.arange(len(levels)), np.asarray(levels, np.int64)]

    @property
    def evaluations(self) -> int:
        """Number of distinct nodes evaluated so far, those only probed for feasibility included."""
        return len(self.cache) + len((self.probed | self.within).difference(self.cache))

    def bound_terms(self) -> list[list[float]]:
        """Per attribute and level, the bound's term ``weight * level_mean`` as a Python float."""
        if self._bound_terms is None:
            pairs = zip(self.weights, self.level_mean, strict=True)
            self._bound_terms = [[float(w * x) for x in lm] for w, lm in pairs]
        return self._bound_terms

    def bound(self, levels: tuple[int, ...]) -> float:
        """Generalization loss of a node: a lower bound of its loss, in O(d).

        Sums the per-attribute terms ``weight * level_mean`` (precomputed as Python floats, so the
        sum is the same float as summing the numpy products in attribute order)."""
        total = 0.0
        for t, lv in zip(self.bound_terms(), levels, strict=True):
            total += t[lv]
        return total

    def class_ids(self, levels: tuple[int, ...], backend: Backend | None = None) -> tuple[np.ndarray, int]:
        """Class id of each distinct row at ``levels`` and the size of the id space."""
        if (backend or self.backend) == "numba":
            radices = self._radix(levels)
            if radices is not None:
                from core.lattice.kernels import group_rows

                cls, sizes = group_rows(self._pack()[0], np.asarray(levels, dtype=np.int64), radices, self.counts)
                return cls, len(sizes)
        return combined_classes([self.codes[a][lv] for a, lv in enumerate(levels)],
                                [self.ncodes[a][lv] for a, lv in enumerate(levels)], len(self.counts))

    def failing(self, cls: np.ndarray, n_cls: int, sizes: np.ndarray | None = None) -> np.ndarray:
        """Boolean per class id: the class fails the requirement (and must be suppressed). ``sizes``: the
        classes' sizes if already counted (``bincount(cls, weights=counts)``)."""
        if self.with_sensitive:
            assert self.sens is not None  # set with with_sensitive
            flat = np.bincount(cls * self.n_sens + self.sens, weights=self.counts, minlength=n_cls * self.n_sens)
            return ~class_ok(flat.reshape(n_cls, self.n_sens), self.req, self.overall)
        if sizes is None:
            sizes = np.bincount(cls, weights=self.counts, minlength=n_cls)
        return sizes < self.req.k_min

    def prepare_projection(self, node: tuple[int, ...]) -> None:
        """On the numba path, cache a cheap table below ``node`` (:meth:`RollUps.prepare_projection`)."""
        if self.backend == "numba":
            self.rollups.prepare_projection(node)

    def table(self, node: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
        """On the numba path, the node's class table by roll-up (:meth:`RollUps.table`); else None."""
        return self.rollups.table(node, self._radix(node, with_sens=True)) if self.backend == "numba" else None

    def evaluate(self, levels: tuple[int, ...] | np.ndarray) -> NodeResult:
        node = tuple(int(x) for x in levels)
        hit = self.cache.get(node)
        if hit is not None:
            return hit
        packed = self.table(node)
        res = self._evaluate_numpy(node) if packed is None else self._evaluate_table(node, *packed)
        self.cache[node] = res
        if packed is None:
            self._did_numpy_work()
        return res

    def _did_numpy_work(self) -> None:
        """Count one numpy pass over the distinct rows; switch to the kernels once they pay (backend.py)."""
        if self.requested == "auto":
            self.numpy_work += len(self.counts)
            if self.numpy_work >= SWITCH_WORK:
                self.backend = "numba"

    def _feasible(self, suppressed: int, classes: int) -> bool:
        """Within the suppression budget and, if set, the average risk bound (classes / released rows)."""
        return suppressed <= self.max_suppressed and self.req.avg_risk_ok(classes, self.n - suppressed)

    def monotone_infeasible(self, res: NodeResult) -> bool:
        """Is every node below ``res`` infeasible too (safe for predictive tagging)?

        Exceeding the suppression budget is monotone. The average risk bound is monotone only without
        suppression: generalizing can release a suppressed class and raise the average (docs/risk.md).
        """
        if res.suppressed > self.max_suppressed:
            return True
        return not res.feasible and (self.req.avg_risk is None or self.max_suppressed == 0)

    def exceeds_suppression(self, levels: tuple[int, ...] | np.ndarray) -> bool:
        """``monotone_infeasible(evaluate(levels))``, answered on the numpy path from the class sizes alone.

        A climb asks it of many nodes whose loss it never reads (on Adult k = 5, <= 4 %, 7 of the 656
        nodes found within the budget were evaluated later): the verdict is remembered (``probed``,
        ``within``), not the node's result, which :meth:`evaluate` computes if it is asked."""
        node = tuple(int(x) for x in levels)
        if node in self.probed or node in self.within:  # an exact verdict, whichever backend runs now
            return node in self.probed
        if node in self.cache or self.backend != "numpy":
            return self.monotone_infeasible(self.evaluate(node))
        _, _, sizes, fail_cls = self._numpy_groups(node)
        self._did_numpy_work()
        kept = sizes[(~fail_cls) & (sizes > 0)]
        suppressed = int(sizes[fail_cls].sum())  # the failing classes' rows (sums of integer counts: exact)
        probe = NodeResult(node, self._feasible(suppressed, len(kept)), suppressed, len(kept), 0, 0.0, 0.0)
        exceeds = self.monotone_infeasible(probe)
        (self.probed if exceeds else self.within).add(node)
        return exceeds

    def _evaluate_table(self, node: tuple[int, ...], tab: np.ndarray, cnt: np.ndarray) -> NodeResult:
        from core.lattice.kernels import failing_codes, group_prefix

        lv = np.asarray(node, np.int64)
        if self.with_sensitive:
            radix = self._radix(node)
            assert radix is not None  # shorter than the table's radix (with the sensitive code), which fit
            cls, sizes = group_prefix(tab, self.batch.d, radix, cnt)
            flat = np.bincount(cls * self.n_sens + tab[:, -1], weights=cnt, minlength=len(sizes) * self.n_sens)
            fail_cls = ~class_ok(flat.reshape(len(sizes), self.n_sens), self.req, self.overall)
            fail = fail_cls[cls]
        else:
            sizes = cnt
            fail_cls = fail = cnt < self.req.k_min
        gen = self.bound(node)
        suppressed, extra = (0, 0.0)
        if fail.any():
            suppressed, per_code = failing_codes(tab, cnt, fail, lv, self._pack()[1].shape[2])
            extra = suppression_extra_matrix(suppressed, per_code, self.node_costs(node), self.weights)
        kept = sizes[~fail_cls]
        return NodeResult(levels=node, feasible=self._feasible(int(suppressed), len(kept)), suppressed=int(suppressed),
                          classes=len(kept), k=int(kept.min()) if len(kept) else 0, loss=gen + extra / self.n,
                          gen_loss=gen)

    def _numpy_groups(self, node: tuple[int, ...]) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
        """The numpy path's classes: each distinct row's class id, their number, sizes and failing ones."""
        cls, n_cls = self.class_ids(node, backend="numpy")
        sizes = np.bincount(cls, weights=self.counts, minlength=n_cls)
        return cls, n_cls, sizes, self.failing(cls, n_cls, sizes)

    def _evaluate_numpy(self, node: tuple[int, ...]) -> NodeResult:
        """Reference path: group the distinct rows directly with numpy (no numba, no roll-up)."""
        cls, _, sizes, fail_cls = self._numpy_groups(node)
        fail_row = fail_cls[cls]
        suppressed, per_code = failing_code_counts([self.codes[a][lv] for a, lv in enumerate(node)], self.counts,
                                                   fail_row, [self.ncodes[a][lv] for a, lv in enumerate(node)])
        gen = self.bound(node)
        loss = gen
        if suppressed:
            loss += suppression_extra(suppressed, per_code, [self.costs[a][lv] for a, lv in enumerate(node)],
                                      self.weights) / self.n
        kept = sizes[(~fail_cls) & (sizes > 0)]
        return NodeResult(levels=node, feasible=self._feasible(suppressed, len(kept)), suppressed=suppressed,
                          classes=len(kept), k=int(kept.min()) if len(kept) else 0, loss=loss, gen_loss=gen)

    def row_partition(self, levels: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """For every input row: its class id at ``levels`` and whether it is suppressed.

        Called once per release, so it uses the numpy path (cheaper than loading another kernel)."""
        cls, n_cls = self.class_ids(tuple(levels), backend="numpy")
        fail = self.failing(cls, n_cls)
        return cls[self.inverse], fail[cls][self.inverse]
