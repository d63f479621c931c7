"""``optimal``: globally optimal full-domain generalization under a suppression limit.

Guarantee: returns a lattice node that satisfies the requirement (k, optional l / t) with at most
``max_suppression`` of the rows suppressed and whose loss (``lm`` or ``precision``, see
:mod:`core.lattice.evaluator`) is minimal over the whole lattice.

Search (best-first branch and bound, in the spirit of Flash / OLA):

* Nodes are generated lazily in non-decreasing order of their generalization loss ``g(node)``
  from a heap seeded with the bottom node (g is additive over attributes and non-decreasing in
  each level, so popping a node and pushing its direct successors enumerates the lattice in
  bound order).
* ``g`` never exceeds the true loss, so the search stops as soon as the next bound is no better
  than the best feasible loss found: every remaining node is provably no better.
* Feasibility is monotone (generalizing never increases the number of rows in failing classes), so
  a node below a known infeasible node is skipped without evaluation (predictive tagging), and a
  node above a node with no suppression has no suppression either: its loss equals ``g`` exactly.
  An ``avg_risk`` failure with suppression is not monotone, so such nodes are not tagged
  (:meth:`NodeEvaluator.monotone_infeasible`).
* Each evaluated node costs one pass over the batch's distinct rows (see NodeEvaluator).
* Wide lattices (over 4M nodes, issue 45): bitset-indexed node sets, a one-pass evaluator under k
  alone, top-first climbs and triple projections (docs/engines/optimal.md, "Search").
"""

from __future__ import annotations

import heapq
import math
from typing import Literal

import numpy as np
from pydantic import Field

from core.encoding import EncodedBatch
from core.engines.base import EngineParams, Progress, Release, no_progress
from core.engines.lattice_engine import LatticeEngine, no_solution, release_from_node
from core.errors import InfeasibleError
from core.lattice import Lattice, NodeEvaluator, NodeResult
from core.lattice.direct import DirectEvaluator
from core.lattice.nodeset import _MAX_BITMAP, NodeSet

__all__ = ["NodeSet", "OptimalEngine", "OptimalParams", "branch_and_bound"]

DIRECT_LATTICE = _MAX_BITMAP  # lattices above this many nodes are searched with a DirectEvaluator

class OptimalParams(EngineParams):
    objective: Literal["lm", "precision"] = Field(default="lm", description="loss to minimise: lm | precision")
    max_nodes: int = Field(default=5_000_000, ge=1, description="safety cap on nodes popped from the queue")


def projection_nodes(lattice: Lattice, width: int) -> list[tuple[int, ...]]:
    """Nodes with at most ``width`` QIs below the top (the others at the top), most general first.

    Generalizing the other QIs to the top can only merge classes, so if such a projection is
    infeasible, so is every node that agrees with it on those QIs (Incognito's subset property).
    """
    import itertools

    top = lattice.top
    out: set[tuple[int, ...]] = set()
    for attrs in itertools.combinations(range(lattice.d), min(width, lattice.d)):
        for lv in itertools.product(*[range(top[a] + 1) for a in attrs]):
            node = list(top)
            for a, v in zip(attrs, lv, strict=True):
                node[a] = v
            out.add(tuple(node))
    return sorted(out, key=lambda n: -sum(n))


def projection_count(heights: np.ndarray, width: int) -> int:
    """Nodes with at most ``width`` QIs below the top (sums of elementary symmetric polynomials)."""
    e = [1] + [0] * width
    for h in heights:
        for j in range(width, 0, -1):
            e[j] += e[j - 1] * int(h)
    return sum(e)


def seed_infeasible(evaluator: NodeEvaluator, lattice: Lattice, infeasible: NodeSet, clean: NodeSet) -> int:
    """Evaluate cheap projection nodes and record the infeasible ones; returns nodes evaluated.

    Triples of QIs are used on wide lattices (at most 1/500 of the nodes are triple projections),
    pairs when that costs well under the lattice's size, single QIs otherwise. An infeasible triple
    projection has every other QI at the top, so passing it queues at most three jump nodes: on
    Cargo at 12 QIs triples cut the nodes popped from 406,832 to 151,977 and the nodes evaluated
    from 52,619 to 38,438 (quadruples evaluate more nodes than they save).
    """
    if lattice.d >= 3 and projection_count(lattice.heights, 3) <= lattice.size / 500:
        width = 3
    else:
        width = 2 if sum((h + 1) ** 2 for h in lattice.heights) * lattice.d < lattice.size / 4 else 1
    nodes = projection_nodes(lattice, width)
    if len(nodes) > lattice.size / 4:
        return 0
    for node in nodes:
        if infeasible.covers(node):
            continue
        evaluator.prepare_projection(node)
        res = evaluator.evaluate(node)
        if evaluator.monotone_infeasible(res):
            infeasible.add(node)
        elif res.feasible and res.suppressed == 0:
            clean.add(node)
    return len(nodes)


def climb_infeasible(evaluator: NodeEvaluator, lattice: Lattice, node: tuple[int, ...],
                     infeasible: NodeSet, top_first: bool = False) -> tuple[int, ...]:
    """From an infeasible node, raise each QI as far as the node stays infeasible.

    One pass over the QIs, each with a binary search on its level, gives a maximal infeasible node
    (raising a QI later can only make the node more feasible, so earlier QIs stay maximal). Every
    node below it is infeasible (monotonicity), so recording it prunes a downward-closed region.

    With ``top_first`` an earlier pass raises every QI that can go straight to the top (one probe
    each). A QI at the top adds no jump node when the search passes the region, and the bitset
    NodeSet of a wide lattice prefers such regions (core/lattice/nodeset.py): on Cargo at 11 QIs it
    cut the nodes evaluated from 35,050 to 25,775 and the nodes popped from 162,337 to 127,632. On
    a small lattice (array NodeSet) it costs probes instead: Adult k=5, <= 4 % evaluated 2,223
    nodes instead of 1,624. The optimum is the same either way.
    """
    current = list(node)

    def infeasible_at(candidate: list[int]) -> bool:
        t = tuple(candidate)
        return infeasible.covers(t) or evaluator.exceeds_suppression(t)

    for a in range(lattice.d if top_first else 0):  # first every QI that can go straight to the top
        if current[a] < lattice.heights[a]:
            low, current[a] = current[a], int(lattice.heights[a])
            if not infeasible_at(current):
                current[a] = low
    for a in range(lattice.d):
        lo, hi = current[a], int(lattice.heights[a])  # lo is known infeasible
        while lo < hi:
            mid = (lo + hi + 1) // 2
            current[a] = mid
            if infeasible_at(current):
                lo = mid
            else:
                hi = mid - 1
        current[a] = lo
    return tuple(current)


def branch_and_bound(evaluator: NodeEvaluator, lattice: Lattice, max_nodes: int,
                     progress: Progress = no_progress, seed: bool = True,
                     known: NodeSet | None = None) -> tuple[NodeResult | None, dict[str, int]]:
    """Best-first branch and bound over the lattice; returns the optimum and search counters.

    ``seed`` evaluates the projections first (:func:`seed_infeasible`) and ``known`` (a downward
    NodeSet of nodes the caller knows infeasible, copied) starts the infeasible set. Both only prune:
    feasible nodes are popped in the same (bound, node) order with or without them, so the search
    returns the same node, with fewer evaluations.
    """
    infeasible = known.copy() if known is not None else NodeSet(lattice.d, upward=False, heights=lattice.heights)
    clean = NodeSet(lattice.d, upward=True, heights=lattice.heights)
    seeded = seed_infeasible(evaluator, lattice, infeasible, clean) if seed else 0
    best: NodeResult | None = None
    start, top = lattice.bottom, lattice.top
    heap: list[tuple[float, tuple[int, ...]]] = [(evaluator.bound(start), start)]
    seen = {start}
    popped = skipped = exact = 0
    while heap and popped < max_nodes:
        bound, node = heapq.heappop(heap)
        if best is not None and bound >= best.loss - 1e-12:
            break
        popped += 1
        above = infeasible.cover(node)
        if above is not None:
            # Every node between ``node`` and ``above`` is infeasible: jump past it. Any node >= node
            # that is not <= above exceeds it in some QI a, so it is >= one of these jump nodes.
            skipped += 1
            nexts = [(*node[:a], above[a] + 1, *node[a + 1 :]) for a in range(lattice.d) if above[a] < top[a]]
        else:
            nexts = list(lattice.successors(node))
        limit = best.loss - 1e-12 if best is not None else math.inf
        for succ in nexts:
            if succ not in seen:
                seen.add(succ)
                succ_bound = evaluator.bound(succ)
                if succ_bound < limit:  # else never popped: the search stops first (best only falls)
                    heapq.heappush(heap, (succ_bound, succ))
        if above is not None:
            continue
        if clean.covers(node):
            exact += 1
            best = NodeResult(node, True, 0, 0, 0, bound, bound)  # loss == bound < best.loss
            continue
        res = evaluator.evaluate(node)
        if not res.feasible:
            if evaluator.monotone_infeasible(res):
                infeasible.add(climb_infeasible(evaluator, lattice, node, infeasible, infeasible.owner is None))
            continue
        if res.suppressed == 0:
            clean.add(node)
        if best is None or res.loss < best.loss - 1e-12:
            best = res
        if popped % 256 == 0:
            progress(min(popped / max(lattice.size, 1), 0.99), f"{popped} nodes, best loss {best.loss:.4f}")
    if heap and popped >= max_nodes and (best is None or heap[0][0] < best.loss - 1e-12):
        raise InfeasibleError(
            f"search stopped after max_nodes={max_nodes} nodes without proving the optimum; raise max_nodes "
            "or use the 'kgen' engine for wide data", reason="search-limit")
    if best is not None and best.classes == 0:
        best = evaluator.evaluate(best.levels)
    return best, {"popped": popped, "skipped_infeasible": skipped, "exact_without_eval": exact,
                  "queued": len(seen), "projections": seeded}


class OptimalEngine(LatticeEngine[OptimalParams]):
    name = "optimal"
    summary = "globally optimal full-domain generalization (best-first branch and bound on the lattice)"
    paper = "Kohlmayer et al. 2012 (Flash), El Emam et al. 2009 (OLA); ground truth for the other engines"
    Params = OptimalParams

    def evaluator(self, batch: EncodedBatch, params: OptimalParams) -> NodeEvaluator:
        """A DirectEvaluator for wide lattices under k alone, the table-based NodeEvaluator otherwise.

        On a wide lattice most evaluations are a climb's feasibility probes, which a one-pass
        evaluation stops early (DirectEvaluator); the same results, with less work per node. Small
        lattices keep the table roll-ups (and the numpy start, see core/lattice/backend.py).
        """
        req = params.requirement()
        if req.needs_sensitive or Lattice(batch.heights).size <= DIRECT_LATTICE:
            return super().evaluator(batch, params)
        return DirectEvaluator(batch, req, params.objective)

    def solve(self, batch: EncodedBatch, params: OptimalParams, rng: np.random.Generator, progress: Progress,
              started: float) -> Release:
        evaluator = self.evaluator(batch, params)
        lattice = Lattice(batch.heights)
        best, counters = branch_and_bound(evaluator, lattice, params.max_nodes, progress)
        if best is None:
            raise no_solution(params, evaluator.evaluate(lattice.top).suppressed)
        progress(1.0, "done")
        return release_from_node(self.name, batch, evaluator, best, params, started, {"search": counters})
