"""``exhaustive``: evaluate every lattice node and keep the best feasible one.

Guarantee: the same optimum as ``optimal`` (ties broken by lowest lattice height, then by level
vector), by brute force. Meant for small lattices and for tests; refuses lattices larger than
``max_nodes``. It also exposes :func:`evaluate_all`, used by benchmarks to build reference fronts.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from core.encoding import EncodedBatch
from core.engines.base import EngineParams, Progress, Release, no_progress
from core.engines.lattice_engine import LatticeEngine, no_solution, release_from_node
from core.errors import ParamsError
from core.lattice import Lattice, NodeEvaluator, NodeResult


class ExhaustiveParams(EngineParams):
    objective: Literal["lm", "precision"] = "lm"
    max_nodes: int = Field(default=200_000, ge=1, description="refuse lattices larger than this")


def evaluate_all(evaluator: NodeEvaluator, lattice: Lattice, max_nodes: int,
                 progress: Progress = no_progress) -> list[NodeResult]:
    if lattice.size > max_nodes:
        raise ParamsError(
            f"lattice has {lattice.size} nodes, more than max_nodes={max_nodes}; use the 'optimal' engine",
        )
    nodes = lattice.all_nodes()
    out = []
    for i, node in enumerate(nodes):
        out.append(evaluator.evaluate(tuple(int(x) for x in node)))
        if i % 500 == 0:
            progress(i / len(nodes), f"{i}/{len(nodes)} nodes")
    return out


class ExhaustiveEngine(LatticeEngine[ExhaustiveParams]):
    name = "exhaustive"
    summary = "brute force over every lattice node (small lattices, tests, reference fronts)"
    Params = ExhaustiveParams

    def solve(self, batch: EncodedBatch, params: ExhaustiveParams, rng: np.random.Generator, progress: Progress,
              started: float) -> Release:
        evaluator = self.evaluator(batch, params)
        results = evaluate_all(evaluator, Lattice(batch.heights), params.max_nodes, progress)
        feasible = [r for r in results if r.feasible]
        if not feasible:
            raise no_solution(params, results[-1].suppressed)
        best = min(feasible, key=lambda r: (round(r.loss, 12), sum(r.levels), r.levels))
        return release_from_node(self.name, batch, evaluator, best, params, started,
                                 {"feasible_nodes": len(feasible)})
