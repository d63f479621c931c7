"""``random``: random search over the generalization lattice under an evaluation budget.

Paper: the Random-Search baseline of De Pascale et al., "Real-world K-Anonymity Applications: the
KGEN approach and its evaluation in Fraudulent Transactions" (§4.3, Table 7: 5,000 evaluations).
It tells whether KGEN does better than chance.

Guarantee: the returned node satisfies the requirement (k, optional l / t) with at most
``max_suppression`` of the rows suppressed (checked on the encoded data). It is the best feasible
node (by the objective) among ``max_evaluations`` nodes drawn uniformly at random, with
replacement, from the lattice (or from the reduced box when ``preprocessing`` is set); repeated
draws are memoized, so ``nodes_evaluated`` counts distinct nodes. No optimality guarantee: the
chance of hitting good nodes falls exponentially with the number of QIs.

Interpretations: draws are uniform per level vector (each QI's level uniform in its range), the
paper's Table 7 "population 5000" being the number of random solutions; if no drawn node is
feasible, the top node is evaluated as a last resort (``fallback_top`` in the diagnostics) rather
than failing, because the top node is the most private candidate; ties are broken like
``exhaustive`` (loss, then height, then level vector). The objective is the evaluator's
``precision`` loss by default, the same as ``kgen``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from core.encoding import EncodedBatch
from core.engines.base import EngineParams, Progress, Release
from core.engines.kgen.bounds import Preprocessing, lattice_bounds, rank_key
from core.engines.lattice_engine import LatticeEngine, no_solution, release_from_node
from core.lattice import NodeResult


class RandomSearchParams(EngineParams):
    privacy_defaults: ClassVar[dict[str, Any]] = {"max_suppression": 0.005}  # the KGEN paper's 0.5 %

    objective: Literal["precision", "lm"] = Field(default="precision", description="loss to minimise")
    max_evaluations: int = Field(default=5000, ge=1, description="random nodes drawn (KGEN paper Table 7: 5000)")
    preprocessing: Preprocessing = Field(default="none",
                                         description="sample the whole lattice (none) or KGEN's reduced box")


class RandomSearchEngine(LatticeEngine[RandomSearchParams]):
    name = "random"
    summary = "random lattice search under an evaluation budget (the KGEN paper's baseline)"
    paper = "De Pascale et al. 2022 (KGEN), random-search baseline"
    Params = RandomSearchParams
    work_budgets: ClassVar[Mapping[str, int]] = {"max_evaluations": 20}

    def solve(self, batch: EncodedBatch, params: RandomSearchParams, rng: np.random.Generator, progress: Progress,
              started: float) -> Release:
        evaluator = self.evaluator(batch, params)
        bounds = lattice_bounds(batch, params.requirement(), params.preprocessing)
        draws = rng.integers(bounds.low, bounds.high + 1, size=(params.max_evaluations, batch.d))
        best: NodeResult | None = None
        for i, row in enumerate(draws):
            res = evaluator.evaluate(tuple(int(x) for x in row))
            if res.feasible and (best is None or rank_key(res) < rank_key(best)):
                best = res
            if i % 500 == 499:
                progress(i / len(draws), f"{i + 1}/{len(draws)} draws, {evaluator.evaluations} distinct")
        fallback = best is None
        if best is None:
            top = evaluator.evaluate(tuple(int(x) for x in bounds.high))
            if not top.feasible:
                raise no_solution(params, top.suppressed)
            best = top
        progress(1.0, "done")
        return release_from_node(self.name, batch, evaluator, best, params, started, {
            "draws": params.max_evaluations, "fallback_top": fallback,
            "preprocessing": bounds.as_dict(batch.schema.qi_names),
        })
