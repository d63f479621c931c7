"""Evaluation-free pruning for PBG-EA: optimistic bounds on a node's quality indices.

Not in the PBG paper; the engine's ``prune`` parameter (default on) enables it, ``prune=False`` is
the paper's search.

A node is *evaluated* when its equivalence classes are computed over the data. Before evaluating
an offspring c, the search bounds its objective vector from what the run already knows (the
nodes it evaluated) and from per-attribute loss tables, without computing c's classes. If the
archive (Algorithm 1) would reject every vector c can possibly have, c is not evaluated
("pruned"); the archive then receives exactly the updates it would have received
(:mod:`core.engines.pbg.search`).

Notation: ``a >= c`` componentwise means a generalizes c, so every class of a is a union of classes
of c; ``a`` ranges over the evaluated generalizations of c, ``b`` over its evaluated
specializations. Suppression is §6's rule: suppress E_1 .. E_j for the smallest j with
|E_1 u .. u E_{j+1}| > eta, k = j + 1, so exactly the classes smaller than k are suppressed and
they hold <= eta rows (if n <= eta, k is the largest class and the rest is suppressed).

1. **k is monotone:** k(b) <= k(c) <= k(a). Proof (c <= a): let K = k(c); the c-classes smaller
   than K hold <= eta rows. An a-class smaller than K is a union of c-classes smaller than K, so
   a's classes smaller than K hold <= eta rows too, and the rule gives k(a) >= K. (If n <= eta,
   k(a) is a's largest class, which is >= any class of c.)
2. **Forced suppression:** if k(c) = K, every row of an a-class smaller than K lies in a c-class
   smaller than K, so c suppresses it. F(K) is the union of those rows over all evaluated a >= c
   (for K <= k(a) they are among the rows a suppressed, which a's evaluation records). Since c
   suppresses at most eta rows, a K with |F(K)| > eta is impossible: this cut is what makes the
   k bound tight in practice.
3. **GLM:** GLM(c) = d * (sum over all rows of their generalized loss at c + sum over suppressed
   rows of (1 - that loss)), every term of the second sum >= 0 (costs in [0, 1], weights
   normalized). The first sum is gen(c) = sum_i L_i(c_i) from per-attribute tables. Hence
   GLM(c) >= G(K) = d * (gen(c) + sum over F(K) of (1 - loss at c)). Floating point: the real
   evaluation clamps each (1 - loss) at 0 too, and G gets a relative slack of 1e-10 if F is non-empty.
4. **S_k, S_l:** S(c) <= S(a) + suppressed(a) * (k(a) - 1). S(c) is at most the sum of squares over
   all c-classes (per sensitive value for S_l), which merging into a-classes can only grow
   ((x + y)^2 >= x^2 + y^2); a's suppressed classes are smaller than k(a) and hold suppressed(a) rows.
5. **l (distinct):** l(c) <= min(K, #sensitive values, distinct(A)) over the a-classes A with
   |A| >= K and |A| > eta - (a's rows in classes < K): c suppresses those rows of a, which lie
   outside A, plus at most the rest of eta, so such an A keeps a row in c, whose class is inside A.
6. **CM:** CM(c) >= max(|F(K)|, mis(b)), mis(b) the tuples outside their class's majority label
   over all classes of b: merging classes never lowers that count, and a suppressed tuple costs
   at least what it would cost misclassified.

So c's true vector is no better than (K, bounds 2-6 at K) for some K in [max k(b), min k(a)] with
|F(K)| <= eta. The bounds are step functions of K; for each step the candidate takes its largest
K (bound 5 is bounded over the whole step, see :meth:`OptimisticBound._l_bound`). Archive
rejection is monotone (:meth:`Archive.rejects`), so c is pruned iff every candidate is rejected.
Without any evaluated a >= c the bounds fall back to k <= n, S <= n^2, l <= #sensitive values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from core.engines.pbg.archive import Archive
from core.engines.pbg.properties import DIRECTIONS, Evaluation, Indices, PropertyEvaluator

Source = Callable[[tuple[int, ...]], Evaluation]


class OptimisticBound:
    """Evaluates nodes (through ``source``, default ``props.evaluate``) and bounds unevaluated ones.

    The search evaluates through :meth:`evaluate`, so every evaluated node is recorded.
    """

    def __init__(self, props: PropertyEvaluator, objectives: tuple[str, ...], source: Source | None = None) -> None:
        self.props, self.objectives = props, tuple(objectives)
        self.source = source or props.evaluate
        self.n, self.d, self.eta = props.n, props.d, props.eta
        self.top = max(props.n_sens, 1)
        self._levels = np.zeros((64, len(props.heights)), dtype=np.int64)
        self._num = np.zeros((64, 4), dtype=np.float64)  # k, S_k cap, S_l cap, misclassified
        self._rec: list[tuple[np.ndarray, np.ndarray]] = []  # suppressed distinct rows, their class sizes
        # for bound 5, padded per record: the distinct sizes of suppressed classes and their rows
        # (at most sqrt(2 eta) sizes fit the budget), and the breakpoints of m_a (<= #sensitive values)
        self._width = (int(np.sqrt(2 * self.eta)) + 2, self.top + 1)
        self._us = np.full((64, self._width[0]), np.iinfo(np.int64).max, dtype=np.int64)
        self._uc = np.zeros((64, self._width[0]), dtype=np.int64)
        self._bs = np.full((64, self._width[1]), -1, dtype=np.int64)
        self._bv = np.full((64, self._width[1]), np.inf)
        self._size = 0
        self.dirs = np.array([DIRECTIONS[o] for o in self.objectives], dtype=np.float64)

    def evaluate(self, node: tuple[int, ...]) -> Indices:
        ev = self.source(node)
        self.record(ev)
        return ev.indices

    def record(self, ev: Evaluation) -> None:
        """Learn from an evaluated node."""
        ind = ev.indices
        if self._size == len(self._num):
            grow = len(self._num)
            self._levels = np.vstack([self._levels, np.zeros_like(self._levels)])
            self._num = np.vstack([self._num, np.zeros_like(self._num)])
            self._us = np.vstack([self._us, np.full_like(self._us[:grow], np.iinfo(np.int64).max)])
            self._uc = np.vstack([self._uc, np.zeros_like(self._uc)])
            self._bs = np.vstack([self._bs, np.full_like(self._bs[:grow], -1)])
            self._bv = np.vstack([self._bv, np.full_like(self._bv[:grow], np.inf)])
        i = self._size
        cap = float(ind.suppressed) * max(ind.k - 1, 0)  # bound 4 on the suppressed classes
        self._levels[i] = ind.levels
        self._num[i] = (ind.k, ind.S_k + cap, (ind.S_l or 0) + cap, ev.misclassified or 0)
        rows, row_sizes = np.asarray(ev.rows, dtype=np.int64), np.asarray(ev.row_sizes, dtype=np.int64)
        self._rec.append((rows, row_sizes))
        us, inv = np.unique(row_sizes, return_inverse=True)
        self._us[i, : len(us)] = us
        self._uc[i, : len(us)] = np.bincount(inv.ravel(), weights=self.props.counts[rows], minlength=len(us))
        if ev.distinct is not None:  # m_a(t) = min distinct over a's classes larger than t
            desc = np.argsort(-ev.sizes, kind="stable")
            pm = np.minimum.accumulate(ev.distinct[desc])
            step = np.ones(len(pm), dtype=bool)
            step[1:] = pm[1:] < pm[:-1]
            self._bs[i, : int(step.sum())] = ev.sizes[desc][step]
            self._bv[i, : int(step.sum())] = pm[step]
        self._size += 1

    def candidates(self, node: tuple[int, ...]) -> np.ndarray:
        """Raw objective vectors, one per step of K, such that ``node``'s true vector is no better
        than one of them (in K order)."""
        nd = np.asarray(node, dtype=np.int64)
        lv, num = self._levels[: self._size], self._num[: self._size]
        above = np.flatnonzero((lv >= nd).all(axis=1))
        below = (lv <= nd).all(axis=1)
        k_hi = int(min(num[above, 0].min(), self.n)) if len(above) else self.n
        k_lo = min(int(num[below, 0].max()), k_hi) if below.any() else 1
        ks, extra, forced = self._forced(nd, above, k_lo, k_hi)
        glm = np.round(self.d * (self.props.gen_loss(node) + extra), 6)
        cols = {"k": ks.astype(np.float64), "GLM": np.where(extra > 0, glm - 1e-10 * glm, glm)}
        sq = float(self.n) ** 2
        cols["S_k"] = np.full(len(ks), min(num[above, 1].min(), sq) if len(above) else sq)
        cols["S_l"] = np.full(len(ks), min(num[above, 2].min(), sq) if len(above) else sq)
        cols["CM"] = np.maximum(forced, num[below, 3].max() if below.any() else 0.0)
        if "l" in self.objectives:
            cols["l"] = self._l_bound(ks, k_lo, above)
        return np.stack([cols[o] for o in self.objectives], axis=1)

    def _forced(self, nd: np.ndarray, above: np.ndarray, k_lo: int,
                k_hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steps of K in [k_lo, k_hi] (the largest K of each step) that fit the budget, and for each
        the deficit at c and the row count of F(K)."""
        parts = [self._rec[i][:2] for i in above if len(self._rec[i][0])]
        if not parts or k_hi <= 1:
            return np.array([k_hi]), np.zeros(1), np.zeros(1)
        rows = np.concatenate([r for r, _ in parts])
        size = np.concatenate([z for _, z in parts])
        keep = size < k_hi
        rows, size = rows[keep], size[keep]
        if not len(rows):
            return np.array([k_hi]), np.zeros(1), np.zeros(1)
        order = np.lexsort((size, rows))  # per row its smallest class size over the a >= c
        rows, size = rows[order], size[order]
        first = np.ones(len(rows), dtype=bool)
        first[1:] = rows[1:] != rows[:-1]
        rows, size = rows[first], size[first]
        deficit = self.props.deficit(tuple(int(x) for x in nd), rows)
        order = np.argsort(size, kind="stable")
        size = size[order]
        cum = np.concatenate([[0.0], np.cumsum(deficit[order])])
        weight = np.concatenate([[0], np.cumsum(self.props.counts[rows][order])])
        steps = np.unique(np.append(size[size >= k_lo], k_hi))
        at = np.searchsorted(size, steps, side="left")  # rows with class size < K
        feasible = weight[at] <= self.eta  # c suppresses F(K), at most eta rows
        if not feasible.any():  # impossible for a true k; stay safe and prune nothing
            return np.array([self.n]), np.zeros(1), np.zeros(1)
        return steps[feasible], cum[at[feasible]], weight[at[feasible]].astype(np.float64)

    def _l_bound(self, ks: np.ndarray, k_lo: int, above: np.ndarray) -> np.ndarray:
        """Bound 5 per step [lo, K] of K: the max over the step of min(K, #sensitive values,
        min_a f_a(K)), f_a(K) the least distinct(A) over a-classes A with |A| >= K and
        |A| > eta - (a's rows in classes < K). Each f_a is largest at an end of the step (its
        threshold is the max of an increasing and a decreasing function of K), so
        min_a max(f_a(lo), f_a(K)) bounds it."""
        out = np.minimum(ks, self.top).astype(np.float64)
        if not len(above):
            return out
        us, uc = self._us[above][:, None, :], self._uc[above][:, None, :]
        bs, bv = self._bs[above][:, None, :], self._bv[above]

        def f(kk: np.ndarray) -> np.ndarray:  # (ancestors, steps)
            own = (uc * (us < kk[None, :, None])).sum(axis=2)
            t = np.maximum(kk[None, :] - 1, self.eta - own)
            j = (bs > t[:, :, None]).sum(axis=2)  # breakpoints of classes larger than t: a prefix
            val = np.take_along_axis(bv, np.maximum(j - 1, 0), axis=1)
            return np.where(j > 0, val, np.inf)

        lo = np.concatenate([[k_lo], ks[:-1] + 1])
        return np.minimum(out, np.maximum(f(lo), f(ks)).min(axis=0))

    def vector(self, cand: np.ndarray) -> np.ndarray:
        """The componentwise most optimistic vector over ``cand``."""
        return np.where(self.dirs > 0, cand.max(axis=0), cand.min(axis=0))

    def prunable(self, node: tuple[int, ...], archive: Archive) -> np.ndarray | None:
        """The optimistic vector if the archive rejects every vector ``node`` can have, else None."""
        cand = self.candidates(node)
        return self.vector(cand) if archive.rejects(cand).all() else None
