"""The PBG-EA loop (PBG paper Algorithm 2) over a :class:`PropertyEvaluator`.

1. A <- {}; initialize P_0 (bottom, top, random nodes); evaluate; update A with P_0 (Algorithm 1).
2. For t = 0 .. iterations-1: fitness on P_t u A; binary tournaments; crossover + mutation give
   P_{t+1}; evaluate; update A with P_{t+1}.
3. Return A.

Evaluations are memoized per run; ``evaluations`` counts the distinct nodes evaluated, the
paper's Table 2(b) measure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from core.engines.base import Progress, no_progress
from core.engines.pbg.archive import Archive
from core.engines.pbg.operators import crossover, initial_population, mutate, spea2_fitness, tournament
from core.engines.pbg.properties import DIRECTIONS, Indices

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


def run_search(evaluate: Evaluate, heights: np.ndarray, cfg: SearchConfig, rng: np.random.Generator,
               progress: Progress = no_progress, observe: Observer | None = None) -> SearchResult:
    """Run PBG-EA; ``evaluate`` maps a node to its indices (it is memoized here).

    ``observe`` (optional) is called after the initial population and after every iteration.
    """
    heights = np.asarray(heights, dtype=np.int64)
    d = len(heights)
    p_mut = cfg.p_mut if cfg.p_mut is not None else 1.0 / max(d, 1)
    dirs = np.array([DIRECTIONS[o] for o in cfg.objectives], dtype=np.float64)
    cache: dict[tuple[int, ...], Indices] = {}

    archive = Archive(cfg.eps, dirs.astype(np.int64))

    def ev(node: tuple[int, ...]) -> Indices:
        hit = cache.get(node)
        if hit is None:
            hit = cache[node] = evaluate(node)
            # Only a node's first offer can change the archive: box-dominance is transitive, so a
            # node offered before is still in A, or box-dominated by / in the box of a member.
            archive.update(node, hit.vector(cfg.objectives), hit)
        return hit

    def offer(pop: np.ndarray) -> list[Indices]:
        return [ev(tuple(int(x) for x in row)) for row in pop]

    pop = initial_population(heights, cfg.population, rng)
    pop_res = offer(pop)
    sizes = [len(archive)]
    if observe is not None:
        observe(0, len(cache), list(archive.payload))  # type: ignore[arg-type]
    for t in range(cfg.iterations):
        members: list[Indices] = pop_res + list(archive.payload)  # type: ignore[arg-type]
        union = np.vstack([pop, np.array([m.levels for m in archive.payload], dtype=np.int64).reshape(-1, d)])
        oriented = np.array([m.vector(cfg.objectives) for m in members]) * dirs
        chosen = tournament(spea2_fitness(oriented), cfg.population, rng)
        pop = mutate(crossover(union[chosen], cfg.p_cross, rng), heights, p_mut, rng)
        pop_res = offer(pop)
        sizes.append(len(archive))
        if observe is not None:
            observe(t + 1, len(cache), list(archive.payload))  # type: ignore[arg-type]
        if t % 10 == 0:
            progress(t / max(cfg.iterations, 1), f"iteration {t}: archive {len(archive)}, {len(cache)} nodes")
    front = sorted(archive.payload, key=lambda r: tuple(r.vector(cfg.objectives)))  # type: ignore[union-attr]
    return SearchResult(front=front, evaluations=len(cache), archive_sizes=sizes)  # type: ignore[arg-type]
