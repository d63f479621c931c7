"""The base of the engines that release one full-domain node of the generalization lattice.

``optimal``, ``exhaustive``, ``datafly``, ``random``, ``kgen``, ``pbg-ea`` and ``local-recode`` share
it: :class:`LatticeEngine` checks the batch (:meth:`LatticeEngine.require`), starts the clock and hands
over to the engine's :meth:`LatticeEngine.solve`; :func:`release_from_node` materializes a node's
release and :func:`no_solution` says why none was found. It sits beside :mod:`core.engines.base`, below
every engine family, so the families never import each other for it.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from core.encoding import EncodedBatch
from core.engines.base import Engine, EngineParams, P, Progress, Release, no_progress, require_rows, require_sensitive
from core.errors import InfeasibleError
from core.lattice import NodeEvaluator, NodeResult
from core.metrics import precision_loss, summarize
from core.privacy import achieved


class LatticeEngine(Engine[P]):
    """An engine that searches the full-domain lattice (:mod:`core.lattice`) and releases one node."""

    searches_lattice: ClassVar[bool] = True

    def anonymize(self, batch: EncodedBatch, params: P, rng: np.random.Generator,
                  progress: Progress = no_progress) -> Release:
        started = time.perf_counter()
        self.require(batch, params)
        return self.solve(batch, params, rng, progress, started)

    def require(self, batch: EncodedBatch, params: P) -> None:
        """Refuse a batch the requirement cannot be met on: fewer rows than k, or l / t without a
        sensitive attribute."""
        require_rows(batch, params.k)
        require_sensitive(batch, params)

    def evaluator(self, batch: EncodedBatch, params: P) -> NodeEvaluator:
        """The node evaluator of ``params``' requirement, with the engine's ``objective`` if it has one."""
        objective = getattr(params, "objective", None)
        req = params.requirement()
        return NodeEvaluator(batch, req) if objective is None else NodeEvaluator(batch, req, objective)

    @abstractmethod
    def solve(self, batch: EncodedBatch, params: P, rng: np.random.Generator, progress: Progress,
              started: float) -> Release:
        """Search the lattice and return the release (``started``: the run's start, for its runtime)."""


def release_from_node(engine: str, batch: EncodedBatch, evaluator: NodeEvaluator, node: NodeResult,
                      params: EngineParams, started: float, diagnostics: dict[str, Any] | None = None) -> Release:
    """Materialize the release of a lattice node: generalize, suppress failing classes, measure."""
    levels = node.levels
    cls, suppressed = evaluator.row_partition(levels)
    n_supp = int(suppressed.sum())
    kept = np.flatnonzero(~suppressed) if n_supp else None  # None: every row is released
    rows = batch.released_frame(levels, kept)
    cost = batch.row_cost(levels, kept)
    cls_kept = cls if kept is None else cls[kept]
    sens = None
    if batch.sensitive_codes is not None:
        sens = batch.sensitive_codes if kept is None else batch.sensitive_codes[kept]
    level = achieved(cls_kept, sens, c=params.c, t_distance=params.t_distance)
    metrics = summarize(cost, batch.weights, cls_kept, n_supp, params.k, batch.schema.qi_names,
                        None if batch.severity is None or sens is None else batch.severity[sens])
    metrics["precision_loss"] = precision_loss(levels, batch.heights)
    diag = {
        "levels": dict(zip(batch.schema.qi_names, levels, strict=True)),
        "heights": dict(zip(batch.schema.qi_names, batch.heights.tolist(), strict=True)),
        "lattice_size": int(np.prod(batch.heights + 1, dtype=float)),
        "nodes_evaluated": evaluator.evaluations,
        "objective": evaluator.loss_name,
        "objective_value": node.loss,
    }
    diag.update(diagnostics or {})
    return Release(
        engine=engine, params=params.model_dump(), requirement=params.requirement(), rows=rows,
        class_ids=cls_kept, suppressed=batch.frame.index.to_numpy()[suppressed], metrics=metrics,
        privacy=level.as_dict(), diagnostics=diag, runtime_s=time.perf_counter() - started,
    )


def no_solution(params: EngineParams, best_suppressed: int | None = None) -> InfeasibleError:
    extra = f"; the most general node still suppresses {best_suppressed} rows" if best_suppressed is not None else ""
    return InfeasibleError(
        f"no generalization meets k={params.k}"
        + (f", l={params.l} ({params.l_kind})" if params.l else "")
        + (f", t={params.t}" if params.t is not None else "")
        + (f", max_risk={params.max_risk}" if params.max_risk is not None else "")
        + (f", avg_risk={params.avg_risk}" if params.avg_risk is not None else "")
        + f" within max_suppression={params.max_suppression}{extra}",
        reason="infeasible",
    )
