"""``pbg-ea``: multi-objective evolutionary search for representative minimal property based
generalizations (the Pareto front of privacy and utility indices) on the full-domain lattice.

PAPER: Dewri, Ray, Ray, Whitley, "On the Identification of Property Based Generalizations in
Microdata Anonymization", DBSec 2010 (Algorithms 1-2, Theorems 1-2).

GUARANTEE: the returned front (``Release.diagnostics["front"]``) holds only nodes that are
mutually non-box-dominated under the discretization ``eps``, at most one per box, each
non-dominated among all nodes the search evaluated (Theorem 1), and no more members than
Theorem 2's bound. It is a heuristic: a member is not guaranteed to be Pareto-optimal over the
whole lattice. The released table is the member chosen by the selection policy (default
``min GLM where k >= <k> [and l >= <l>]``): its smallest classes are suppressed within the budget
eta = ``max_suppression`` * n rows, and the release states and is verified against the member's own
k (and distinct l, when the spec has a sensitive attribute), which are at least what the policy
asked for.

PRUNING (``prune=True``, the default; not in the paper): before a new offspring is evaluated, its
indices are bounded from the nodes already evaluated (k, S_k, S_l, l from above, GLM and CM from
below, jointly per possible value of k; proofs in :mod:`core.engines.pbg.prune`). If the archive
would reject every vector the node can have, the node is not evaluated: the archive receives
exactly the same updates as if it had been (so every guarantee above holds, and members are
non-dominated among the pruned nodes too), while the GA sees the bound in place of the skipped
node's true vector. ``diagnostics["nodes_evaluated"]`` counts only nodes whose classes were
computed; ``diagnostics["nodes_pruned"]`` the distinct nodes skipped. ``prune=False`` runs the
paper's algorithm unchanged.

See :mod:`core.engines.pbg.properties` for the indices and the interpretations chosen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, field_validator, model_validator

from core.encoding import EncodedBatch
from core.engines.base import EngineParams, Progress, Release, no_progress, require_models, require_rows
from core.engines.lattice_engine import LatticeEngine, release_from_node
from core.engines.pbg import (
    DIRECTIONS,
    Indices,
    Policy,
    PropertyEvaluator,
    SearchConfig,
    canonical_index,
    eta_rows,
    parse_policy,
    run_search,
    theorem2_bound,
)
from core.engines.pbg.properties import unavailable
from core.engines.pbg.prune import OptimisticBound
from core.errors import ParamsError
from core.lattice import NodeEvaluator


def _split(v: Any) -> Any:
    return tuple(x.strip() for x in v.split(",") if x.strip()) if isinstance(v, str) else v


class PBGParams(EngineParams):
    privacy_defaults: ClassVar[dict[str, Any]] = {"max_suppression": 0.01}  # the paper's suppression budget eta

    objectives: tuple[str, ...] = Field(default=("k", "GLM"), min_length=1,
                                        description="quality indices to trade off: k, l, S_k, S_l, GLM, CM")
    eps: tuple[float, ...] | None = Field(default=None, description="discretization per objective (default all 1)")
    population: int = Field(default=25, ge=2, description="N_pop")
    iterations: int = Field(default=100, ge=0, description="generations")
    p_cross: float = Field(default=0.8, ge=0, le=1, description="single-point crossover probability")
    p_mut: float | None = Field(default=None, ge=0, le=1, description="per-attribute mutation (default 1/#QIs)")
    select: str | None = Field(default=None, description="policy, e.g. 'min GLM where k >= 5 and l >= 3'")
    class_attribute: str | None = Field(default=None, description="column with the class label for CM")
    prune: bool = Field(default=True, description="skip evaluating nodes whose optimistic bound the archive "
                                                  "rejects (exact: same archive updates); False = the paper's search")

    @field_validator("objectives", "eps", mode="before")
    @classmethod
    def _csv(cls, v: Any) -> Any:
        return _split(v)

    @field_validator("objectives")
    @classmethod
    def _names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        try:
            names = tuple(canonical_index(x, tuple(DIRECTIONS)) for x in v)
        except ParamsError as exc:
            raise ValueError(exc.message) from None
        if len(set(names)) != len(names):
            raise ValueError(f"objectives repeat an index: {', '.join(names)}")
        return names

    @model_validator(mode="after")
    def _consistent(self) -> PBGParams:
        if self.eps is not None and (len(self.eps) != len(self.objectives) or min(self.eps) <= 0):
            raise ValueError(f"eps needs one positive value per objective ({len(self.objectives)})")
        if self.l_kind != "distinct" or self.t is not None:
            raise ValueError("pbg-ea measures distinct l only; t-closeness and other l kinds are not supported")
        if self.max_risk is not None and self.select is not None:
            raise ValueError(f"with select, state the risk bound as a condition 'k >= {self.requirement().k_min}' "
                             "instead of max_risk")
        return self

    @field_validator("select")
    @classmethod
    def _policy(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                parse_policy(v)
            except ParamsError as exc:
                raise ValueError(exc.message) from None
        return v

    def policy(self) -> Policy:
        if self.select:
            return parse_policy(self.select)
        text = f"min GLM where k >= {self.requirement().k_min}"
        text += f" and l >= {self.l}" if self.l and self.l > 1 else ""
        return parse_policy(text)


def front_rows(front: list[Indices], names: list[str], selected: int | None) -> list[dict[str, Any]]:
    rows = []
    for i, m in enumerate(front):
        row: dict[str, Any] = {"levels": dict(zip(names, m.levels, strict=True))}
        row.update({k: v for k, v in m.as_dict().items() if k != "levels"})
        row["selected"] = i == selected
        rows.append(row)
    return rows


class PBGEAEngine(LatticeEngine[PBGParams]):
    name = "pbg-ea"
    summary = "Pareto front of privacy/utility indices (k, l, S_k, S_l, GLM, CM) by evolutionary search"
    paper = "Dewri et al. 2010, On the Identification of Property Based Generalizations (PBG-EA)"
    Params = PBGParams
    models = ("k", "l", "t", "max_risk")  # max_risk as the policy's k >= ceil(1/max_risk); avg_risk refused
    work_budgets: ClassVar[Mapping[str, int]] = {"iterations": 1}

    def search(self, batch: EncodedBatch, params: PBGParams, rng: np.random.Generator,
               progress: Progress = no_progress) -> tuple[list[Indices], dict[str, Any]]:
        """Run the search only: the front (sorted by the first objective) and search diagnostics."""
        labels = None
        if params.class_attribute is not None:
            if params.class_attribute not in batch.frame.columns:
                raise ParamsError(f"class_attribute '{params.class_attribute}' is not a column of the batch; "
                                  f"columns: {', '.join(batch.frame.columns)} (add it to the spec's passthrough)")
            labels = batch.frame[params.class_attribute].to_numpy()
        props = PropertyEvaluator(batch, eta_rows(batch.n, params.max_suppression), labels)
        available = props.available()
        for name in (*params.objectives, *params.policy().indices_used()):
            if name not in available:
                raise unavailable(name)
        eps = params.eps or (1.0,) * len(params.objectives)
        cfg = SearchConfig(params.objectives, tuple(float(e) for e in eps), params.population,
                           params.iterations, params.p_cross, params.p_mut)
        bound = OptimisticBound(props, params.objectives) if params.prune else None
        result = run_search(props.indices, batch.heights, cfg, rng, progress, bound=bound)
        upper = [props.bounds()[o] for o in params.objectives]
        diag = {"objectives": list(params.objectives), "eps": list(eps), "eta_rows": props.eta,
                "nodes_evaluated": result.evaluations, "prune": params.prune, "nodes_pruned": result.pruned,
                "archive_bound": theorem2_bound(upper, eps),
                "population": params.population, "iterations": params.iterations,
                "work_budget": {"generations": params.iterations, "population": params.population},
                "budget_cap_hit": False}  # no wall clock: the budget is generations only
        return result.front, diag

    def require(self, batch: EncodedBatch, params: PBGParams) -> None:
        """The models asked (direct callers may skip ``make_params``), and k rows under the default policy;
        a sensitive attribute is needed only by the indices that use one (refused by :meth:`search`)."""
        require_models(self, params)
        if params.select is None:  # the default policy asks for k >= params.k
            require_rows(batch, params.k)

    def solve(self, batch: EncodedBatch, params: PBGParams, rng: np.random.Generator, progress: Progress,
              started: float) -> Release:
        policy = params.policy()
        front, diag = self.search(batch, params, rng, progress)
        chosen = policy.select(front)
        member = front[chosen]
        sens_l = member.l if member.l is not None and member.l > 1 else None
        rel_params = params.model_copy(update={"k": member.k, "l": sens_l})
        evaluator = NodeEvaluator(batch, rel_params.requirement())
        node = evaluator.evaluate(member.levels)
        if node.suppressed != member.suppressed or node.k != member.k or not node.feasible:
            raise RuntimeError(f"pbg-ea: release of {member.levels} disagrees with its front entry "
                               f"(k {node.k} vs {member.k}, suppressed {node.suppressed} vs {member.suppressed})")
        progress(1.0, "done")
        diag.update({"policy": str(policy), "selected": chosen, "requested": {"k": params.k, "l": params.l},
                     "front": front_rows(front, batch.schema.qi_names, chosen),
                     "selected_indices": member.as_dict()})
        return release_from_node(self.name, batch, evaluator, node, rel_params, started, diag)
