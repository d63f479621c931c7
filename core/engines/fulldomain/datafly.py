"""``datafly``: Sweeney's Datafly heuristic (Sweeney 1998, "Datafly: a system for providing anonymity
in medical data").

Guarantee: the returned full-domain node satisfies the requirement with at most ``max_suppression``
of the rows suppressed. It is greedy, not optimal: starting from the bottom node it repeatedly
generalizes, by one level, the QI with the most distinct values in the current generalized table,
until the rows in failing classes fit in the suppression budget; those rows are then suppressed.
"""

from __future__ import annotations

import numpy as np

from core.encoding import EncodedBatch
from core.engines.base import EngineParams, Progress, Release
from core.engines.lattice_engine import LatticeEngine, no_solution, release_from_node


class DataflyEngine(LatticeEngine[EngineParams]):
    name = "datafly"
    summary = "Sweeney's greedy Datafly: generalize the QI with most distinct values until k holds"
    paper = "Sweeney 1998 (Datafly)"
    Params = EngineParams

    def solve(self, batch: EncodedBatch, params: EngineParams, rng: np.random.Generator, progress: Progress,
              started: float) -> Release:
        evaluator = self.evaluator(batch, params)
        levels = [0] * batch.d
        total = int(batch.heights.sum()) or 1
        while True:
            res = evaluator.evaluate(tuple(levels))
            if res.feasible:
                break
            open_qis = [a for a in range(batch.d) if levels[a] < batch.heights[a]]
            if not open_qis:
                raise no_solution(params, res.suppressed)
            distinct = [len(np.unique(batch.qis[a].at(levels[a]))) for a in open_qis]
            levels[open_qis[int(np.argmax(distinct))]] += 1
            progress(sum(levels) / total, f"levels {levels}, {res.suppressed} rows failing")
        progress(1.0, "done")
        return release_from_node(self.name, batch, evaluator, res, params, started)
