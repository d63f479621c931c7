"""The PBG-EA loop (PBG paper Algorithm 2) over a :class:`PropertyEvaluator`.

1. A <- {}; initialize P_0 (bottom, top, random nodes); evaluate; update A with P_0 (Algorithm 1).
2. For t = 0 .. iterations-1: fitness on P_t u A; binary tournaments; crossover + mutation give
   P_{t+1}; evaluate; update A with P_{t+1}.
3. Return A.

Evaluations are memoized per run; ``evaluations`` counts the distinct nodes evaluated (their
classes computed over the data), the paper's Table 2(b) measure.

Pruning (optional ``bound``, :mod:`core.engines.pbg.prune`; not in the paper): before evaluating
a new node the search asks the bound for every objective vector the node can still have. If the
archive would reject all of them (:meth:`Archive.rejects`), it would reject the node's true vector
too, leaving the archive unchanged, so the node is not evaluated and not offered; the archive
evolves exactly as if it had been. A rejected vector stays rejected (a member that rejects it is
only ever replaced by one that rejects it too), so a pruned node stays pruned without a new check.
INTERPRETATION: for fitness and tournaments a pruned node carries its componentwise most
optimistic bound vector (it can never enter the archive either way). ``pruned`` counts the
distinct nodes skipped this way; they are not evaluations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from core.engines.base import Progress, no_progress
from core.engines.pbg.archive import Archive
from core.engines.pbg.operators import crossover, initial_population, mutate, spea2_fitness, tournament
from core.engines.pbg.properties import DIRECTIONS, Indices
from core.engines.pbg.prune import OptimisticBound

Evaluate = Callable[[tuple[int, ...]], Indices]
Observer = Callable[[int, int, list[Indices]], None]  # (iteration, distinct evaluations, archive members)


@dataclass
class SearchConfig:
    objectives: tuple[str, ...]
    eps: tuple[float, ...]
    population: int = 25
    iterations: int = 100
    p_cross: float = 0.8
    p_mut: float | None = None  # default 1 / number of QIs


@dataclass
class SearchResult:
    front: list[Indices]
    evaluations: int
    archive_sizes: list[int] = field(default_factory=list)
    pruned: int = 0  # distinct nodes never evaluated because their bound was rejected
    prune_skips: int = 0  # offspring (with repeats) answered by the bound
    pruned_nodes: frozenset[tuple[int, ...]] = frozenset()
    evaluated_nodes: frozenset[tuple[int, ...]] = frozenset()


def run_search(evaluate: Evaluate, heights: np.ndarray, cfg: SearchConfig, rng: np.random.Generator,
               progress: Progress = no_progress, observe: Observer | None = None,
               bound: OptimisticBound | None = None) -> SearchResult:
    """Run PBG-EA; ``evaluate`` maps a node to its indices (it is memoized here).

    ``observe`` (optional) is called after the initial population and after every iteration.
    ``bound`` (optional) enables pruning; it must bound exactly ``cfg.objectives``. With a bound,
    nodes are evaluated through ``bound.evaluate`` (so it learns from each) and ``evaluate`` is unused.
    """
    heights = np.asarray(heights, dtype=np.int64)
    d = len(heights)
    p_mut = cfg.p_mut if cfg.p_mut is not None else 1.0 / max(d, 1)
    dirs = np.array([DIRECTIONS[o] for o in cfg.objectives], dtype=np.float64)
    cache: dict[tuple[int, ...], np.ndarray] = {}
    if bound is not None:
        evaluate = bound.evaluate
    pruned: dict[tuple[int, ...], np.ndarray] = {}
    skips = 0

    archive = Archive(cfg.eps, dirs.astype(np.int64))

    def members() -> list[Indices]:
        return cast(list[Indices], archive.payload)  # every update below offers an Indices payload

    def ev(node: tuple[int, ...]) -> np.ndarray:
        nonlocal skips
        hit = cache.get(node)
        if hit is not None:
            return hit
        if bound is not None:
            est = pruned.get(node)
            if est is None:
                est = bound.prunable(node, archive)
            if est is not None:
                # once rejected, always rejected (a member that rejects a vector is only ever
                # replaced by one that rejects it too), so a pruned node keeps its first bound
                pruned[node] = est
                skips += 1
                return est
        res = evaluate(node)
        hit = cache[node] = res.vector(cfg.objectives)
        # Only a node's first offer can change the archive: box-dominance is transitive, so a
        # node offered before is still in A, or box-dominated by / in the box of a member.
        archive.update(node, hit, res)
        return hit

    def offer(pop: np.ndarray) -> list[np.ndarray]:
        return [ev(tuple(int(x) for x in row)) for row in pop]

    pop = initial_population(heights, cfg.population, rng)
    pop_vals = offer(pop)
    sizes = [len(archive)]
    if observe is not None:
        observe(0, len(cache), list(members()))
    for t in range(cfg.iterations):
        vectors = pop_vals + [m.vector(cfg.objectives) for m in members()]
        union = np.vstack([pop, np.array([m.levels for m in members()], dtype=np.int64).reshape(-1, d)])
        oriented = np.array(vectors) * dirs
        chosen = tournament(spea2_fitness(oriented), cfg.population, rng)
        pop = mutate(crossover(union[chosen], cfg.p_cross, rng), heights, p_mut, rng)
        pop_vals = offer(pop)
        sizes.append(len(archive))
        if observe is not None:
            observe(t + 1, len(cache), list(members()))
        if t % 10 == 0:
            progress(t / max(cfg.iterations, 1), f"iteration {t}: archive {len(archive)}, {len(cache)} nodes")
    front = sorted(members(), key=lambda r: tuple(r.vector(cfg.objectives)))
    return SearchResult(front=front, evaluations=len(cache), archive_sizes=sizes,
                        pruned=len(pruned), prune_skips=skips, pruned_nodes=frozenset(pruned),
                        evaluated_nodes=frozenset(cache))
