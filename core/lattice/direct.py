"""A node evaluator for searches that evaluate many nodes of small batches (``local-recode``'s rounds).

:class:`DirectEvaluator` gives the same results as :class:`~core.lattice.evaluator.NodeEvaluator`
(``tests/core/engines/test_property.py`` checks it) with less work per node when the requirement is
k-anonymity alone and the batch has at most ``max_rows`` distinct rows:

* A node is evaluated in one pass over the distinct rows (:func:`~core.lattice.kernels.evaluate_k`:
  classes counted in a dense array or a hash table, the cost of a suppressed class from one of its
  rows), instead of finding the smallest cached class table below it and rolling that up. On
  Adult's rounds (at most 19,502 distinct rows) the pass is cheaper than the search for a table.
* :meth:`exceeds_suppression` (the question a climb to a maximal infeasible node asks) stops the
  pass as soon as enough rows are known to be in classes of at least k: class sizes only grow
  during the pass, so such a node is within the suppression budget whatever the rest holds.
* Bounds of lattices up to ``_MAX_BOUND_NODES`` nodes are computed once for every node, adding the
  same terms in the same order as :meth:`NodeEvaluator.bound` (the same floats).

With a sensitive attribute, or more distinct rows, it is a plain NodeEvaluator.
"""

from __future__ import annotations

import numpy as np

from core.encoding import EncodedBatch
from core.lattice.evaluator import LossName, NodeEvaluator, NodeResult
from core.lattice.suppression import suppression_extra_matrix
from core.privacy.requirement import PrivacyRequirement

_MAX_BOUND_NODES = 1 << 20  # lattices up to this size get every node's bound up front (8 MB)


class DirectEvaluator(NodeEvaluator):
    """NodeEvaluator evaluating k-only nodes in one pass over the distinct rows (see the module)."""

    def __init__(self, batch: EncodedBatch, req: PrivacyRequirement, loss: LossName = "lm",
                 max_rows: int = 1 << 16) -> None:
        super().__init__(batch, req, loss)
        self.direct = not self.with_sensitive and len(self.counts) <= max_rows
        self._bound_all: np.ndarray | None = None
        sizes = [int(h) + 1 for h in self.heights]
        if sizes and np.prod(sizes, dtype=np.float64) <= _MAX_BOUND_NODES:
            terms = self.bound_terms()
            acc = np.asarray(terms[0], np.float64)
            for t in terms[1:]:
                acc = acc[..., None] + np.asarray(t, np.float64)  # ((t0 + t1) + t2) ...: bound()'s order
            self._bound_all = acc

    def bound(self, levels: tuple[int, ...]) -> float:
        if self._bound_all is None:
            return super().bound(levels)
        return float(self._bound_all[tuple(levels)])

    def evaluate(self, levels: tuple[int, ...] | np.ndarray) -> NodeResult:
        node = tuple(int(x) for x in levels)
        hit = self.cache.get(node)
        if hit is not None:
            return hit
        counts = self._counts(node) if self.direct else None
        if counts is None:
            return super().evaluate(node)
        res = self.cache[node] = self._result(node, *counts)
        return res

    def exceeds_suppression(self, levels: tuple[int, ...] | np.ndarray) -> bool:
        """``monotone_infeasible(evaluate(levels))``, with the pass stopped early where possible.

        A node found within the budget that way is remembered in ``within``, not in the cache (its
        loss is unknown); the average risk bound needs the whole pass, so it turns the stop off.
        """
        node = tuple(int(x) for x in levels)
        if node in self.within:
            return False
        if node not in self.cache and self.direct and self.req.avg_risk is None:
            need = self.n - self.max_suppressed
            counts = self._counts(node, need) if need > 0 else (-1, None, 0, 0)
            if counts is not None and counts[0] < 0:
                self.within.add(node)
                return False
            if counts is not None:
                self.cache[node] = self._result(node, *counts)
        return self.monotone_infeasible(self.evaluate(node))

    def _counts(self, node: tuple[int, ...], need: int = 0) -> tuple[int, np.ndarray | None, int, int] | None:
        """:func:`~core.lattice.kernels.evaluate_k` for ``node`` (None when its key would overflow)."""
        radix = self._radix(node)
        if radix is None:
            return None
        from core.lattice.kernels import evaluate_k

        cube = self._pack()[0]
        width = max(self.ncodes[a][v] for a, v in enumerate(node)) if node else 1  # the node's codes only
        space = int(radix[-1]) * self.ncodes[-1][node[-1]] if node else 1
        rows, per_code, classes, smallest = evaluate_k(cube, np.asarray(node, np.int64), radix, space, self.counts,
                                                       self.req.k_min, width, need)
        return int(rows), per_code, int(classes), int(smallest)

    def _result(self, node: tuple[int, ...], suppressed: int, per_code: np.ndarray | None, classes: int,
                smallest: int) -> NodeResult:
        """The node's result; its suppression cost summed as every evaluator sums it (core/lattice/suppression.py)."""
        gen = self.bound(node)
        loss = gen
        if suppressed and per_code is not None:
            loss += suppression_extra_matrix(suppressed, per_code, self.node_costs(node), self.weights) / self.n
        return NodeResult(levels=node, feasible=self._feasible(suppressed, classes), suppressed=suppressed,
                          classes=classes, k=smallest, loss=loss, gen_loss=gen)
