"""``kgen``: KGEN, a genetic algorithm for full-domain generalization on wide data.

Paper: D. De Pascale, G. Cascavilla, D. A. Tamburri, W.-J. Van Den Heuvel, "Real-world
K-Anonymity Applications: the KGEN approach and its evaluation in Fraudulent Transactions"
(Algorithm 1, §3.2-3.5, Table 7).

Guarantee: the returned lattice node satisfies the requirement (k, optional l / t) with at most
``max_suppression`` of the rows suppressed: feasibility is checked on the encoded data by
:class:`core.lattice.NodeEvaluator`, never assumed. It is NOT guaranteed optimal; it is the best
feasible node the search evaluated (near-optimal in practice, see bench/kgen_paper.py). Same
seed, same result.

Algorithm 1 as implemented:

1. Lattice preprocessing (§3.2): per-QI minimum levels, suppression-aware by default
   (see :mod:`core.engines.kgen.bounds` for the §7 issue and why our bound is sound).
2. A random initial population of ``population`` level vectors inside the reduced box.
3. While fewer than ``max_evaluations`` candidates were generated: for each pair of parents
   (tournament selection with age penalty), crossover with probability ``crossover_rate`` (else
   the parents are copied), standard mutation with ``mutation_rate``, horizontal mutation with
   ``horizontal_mutation_rate``; each pair counts 2 evaluations, as in Algorithm 1 (the initial
   population counts ``population``). Offspring are evaluated, the survivors (best distinct
   nodes of parents + offspring) form the next generation and every surviving parent's age
   penalty grows by 1.
   The search stops early once every node of the reduced box has been evaluated (small
   lattices), since no better node can remain.
4. The best feasible node found (by the objective) is released. If none was found, the top of
   the reduced box is tried; if that fails too, no node can satisfy the requirement.

Fitness is the evaluator's ``precision`` loss (eq. 1-2 averaged over records, a suppressed record
counting as fully generalized, like ARX's precision and the ``optimal`` engine's
``objective="precision"``), so results are comparable with the optimum; the pure eq. 2 value of the
level vector is reported as ``metrics.precision_loss``. Every evaluation is memoized: the
diagnostics give the distinct nodes evaluated (``nodes_evaluated``) beside the budget counter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from core.encoding import EncodedBatch
from core.engines.base import EngineParams, Progress, Release, no_progress
from core.engines.kgen.bounds import Bounds, Preprocessing, attribute_loss, lattice_bounds, rank_key
from core.engines.kgen.operators import (
    Member,
    crossover,
    horizontal_mutate,
    mutate,
    selection_weights,
    survivors,
    tournament,
)
from core.engines.lattice_engine import LatticeEngine, no_solution, release_from_node
from core.lattice import NodeEvaluator, NodeResult


class KgenParams(EngineParams):
    privacy_defaults: ClassVar[dict[str, Any]] = {"max_suppression": 0.005}  # the paper's 0.5 % requirement

    objective: Literal["precision", "lm"] = Field(default="precision",
                                                  description="fitness: precision (paper eq. 1-2) | lm")
    max_evaluations: int = Field(default=5000, ge=2, description="candidate evaluations budget (Table 7: 5000)")
    population: int = Field(default=100, ge=2, description="population size (Table 7: 100)")
    crossover_rate: float = Field(default=0.9, ge=0, le=1, description="crossover probability (Table 7: 0.9)")
    mutation_rate: float = Field(default=0.2, ge=0, le=1, description="standard mutation probability (0.2)")
    horizontal_mutation_rate: float = Field(default=0.4, ge=0, le=1,
                                            description="horizontal mutation probability (Table 7: 0.4)")
    horizontal_fraction: float = Field(default=0.5, gt=0, le=1,
                                       description="share of free genes a horizontal mutation changes (§3.5: 50 %)")
    tournament_size: int = Field(default=2, ge=1, description="entrants per tournament")
    max_penalty: int = Field(default=10, ge=1, description="age penalty at which selection probability is 0")
    preprocessing: Preprocessing = Field(default="suppression-aware",
                                         description="lattice reduction: suppression-aware | paper | none")

    @model_validator(mode="after")
    def _budget_covers_population(self) -> KgenParams:
        if self.max_evaluations < self.population:
            raise ValueError(f"max_evaluations ({self.max_evaluations}) must be at least population "
                             f"({self.population})")
        return self


class GeneticSearch:
    """One run of Algorithm 1 on an evaluator and a reduced lattice box."""

    def __init__(self, evaluator: NodeEvaluator, bounds: Bounds, params: KgenParams, rng: np.random.Generator,
                 progress: Progress = no_progress) -> None:
        self.ev, self.bounds, self.p, self.rng, self.progress = evaluator, bounds, params, rng, progress
        self.best: NodeResult | None = None
        self.best_generation = 0
        self.generation = 0
        self.evaluations = 0
        self.cases: Counter[str] = Counter()
        self.history: list[float | None] = []

    def evaluate(self, node: tuple[int, ...]) -> NodeResult:
        res = self.ev.evaluate(node)
        if res.feasible and (self.best is None or rank_key(res) < rank_key(self.best)):
            self.best, self.best_generation = res, self.generation
        return res

    def breed(self, pop: list[Member]) -> list[tuple[int, ...]]:
        """Offspring of one generation (Algorithm 1 lines 7-14)."""
        p, rng = self.p, self.rng
        probs = selection_weights(pop, p.max_penalty, self.ev.n)
        kids: list[tuple[int, ...]] = []
        for _ in range(0, p.population, 2):
            if self.evaluations >= p.max_evaluations:
                break
            a = tournament(pop, probs, p.tournament_size, rng)
            b = tournament(pop, probs, p.tournament_size, rng)
            if rng.random() < p.crossover_rate:
                pair = crossover(a, b, self.evaluate, rng, self.cases)
            else:
                pair = [a.levels, b.levels]
            for child in pair:
                if rng.random() < p.mutation_rate:
                    child = mutate(child, self.bounds, rng)
                    self.cases["mutation"] += 1
                if rng.random() < p.horizontal_mutation_rate:
                    child = horizontal_mutate(child, self.bounds, p.horizontal_fraction, rng)
                    self.cases["horizontal_mutation"] += 1
                kids.append(child)
            self.evaluations += 2
        return kids

    def run(self) -> NodeResult | None:
        p = self.p
        pop = survivors([Member(n, self.evaluate(n)) for n in
                         (self.bounds.random_node(self.rng) for _ in range(p.population))], p.population)
        self.evaluations = p.population
        self.history.append(self.best.loss if self.best else None)
        while self.evaluations < p.max_evaluations:
            if self.ev.evaluations >= self.bounds.size:
                self.cases["stopped_box_exhausted"] = 1  # every node of the box evaluated: nothing left
                break
            self.generation += 1
            kids = [Member(n, self.evaluate(n)) for n in self.breed(pop)]
            for m in pop:
                m.age = min(m.age + 1, p.max_penalty)
            pop = survivors(pop + kids, p.population)
            self.history.append(self.best.loss if self.best else None)
            self.progress(min(self.evaluations / p.max_evaluations, 0.99),
                          f"generation {self.generation}, {self.ev.evaluations} distinct nodes")
        return self.best

    def diagnostics(self) -> dict[str, Any]:
        return {
            "generations": self.generation, "evaluations": self.evaluations,
            "best_generation": self.best_generation, "operators": dict(self.cases),
            "history": [None if h is None else round(h, 6) for h in self.history],
        }


class KgenEngine(LatticeEngine[KgenParams]):
    name = "kgen"
    summary = "KGEN genetic algorithm over the generalization lattice (near-optimal, for many QIs)"
    paper = "De Pascale et al. 2022, KGEN: real-world k-anonymity applications (genetic algorithm)"
    Params = KgenParams
    work_budgets: ClassVar[Mapping[str, int]] = {"max_evaluations": 20}

    def solve(self, batch: EncodedBatch, params: KgenParams, rng: np.random.Generator, progress: Progress,
              started: float) -> Release:
        evaluator = self.evaluator(batch, params)
        bounds = lattice_bounds(batch, params.requirement(), params.preprocessing)
        search = GeneticSearch(evaluator, bounds, params, rng, progress)
        best = search.run()
        fallback = False
        if best is None:
            top = evaluator.evaluate(tuple(int(x) for x in bounds.high))
            if not top.feasible:
                raise no_solution(params, top.suppressed)
            best, fallback = top, True
        progress(1.0, "done")
        diag: dict[str, Any] = {"preprocessing": bounds.as_dict(batch.schema.qi_names), **search.diagnostics(),
                                "fallback_top": fallback, "work_budget": {"max_evaluations": params.max_evaluations},
                                "budget_cap_hit": False}  # no wall clock: the budget is evaluations only
        release = release_from_node(self.name, batch, evaluator, best, params, started, diag)
        release.diagnostics["attribute_loss"] = attribute_loss(batch, best.levels, release.metrics, release.rows)
        return release
