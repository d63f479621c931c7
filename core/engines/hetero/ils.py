"""``ils``: iterated local search for heterogeneous k-anonymity over a k-regular bipartite graph.

PAPER: "Heterogeneous k-anonymity with iterated local search" (the ILS paper,
/work/shared/papers/heterogeneous-k-anonymity-iterated-local-search.txt), building on Doka et al.,
"k-Anonymization by freeform generalization" (ASIACCS 2015) for the k-regular graph model.

GUARANTEE (k-regular heterogeneous k-anonymity, §3): the release has one anonymized row per input
row; anonymized row i generalizes exactly k original rows (itself included) and every original row
is generalized by exactly k anonymized rows. The generalization of a row is the range
``[min-max]`` of its matches' numeric values and the set ``{a,b}`` of their other values, so each
match's value lies inside. A k-regular bipartite graph is the union of k disjoint perfect
matchings (König), so every original row has at least k anonymized rows it may have become and
vice versa: the re-identification probability of a random attack is at most 1/k, as for
homogeneous k-anonymity. WEAKER SPOT: against an adversary who already knows c true matches the
protection drops to k - c - phi(k) with 0 <= phi <= 34 c^2 / k (§3, after Doka et al.), whereas a
homogeneous class drops to k - c. No row is suppressed; l-diversity and t-closeness are not offered.

Search (``search = "2opt"``, the paper's): start from any homogeneous clustering (``start``: k-member,
l-greedy or any registered engine that returns classes of >= k rows without suppression), turned
into a k-regular graph as §5.5 describes; descend with first-improvement 2-opt moves over
tuple-disjoint edges and the candidate list of Algorithm 2; then iterate perturbation
(``perturbation`` random swaps), descent and acceptance. The objective is GCP (eq. 1-4) or SIL
(eq. 5-7); a move's delta costs O(d) through the §5 structures (:mod:`core.engines.hetero.state`).

Search (``search = "assign"``, the default; OUR ADDITION, not in the paper): the same start is the
incumbent; an assignment phase (:mod:`core.engines.hetero.assign_search`) first builds a k-regular
graph from scratch by block assignment (Doka et al.'s construction, on which the paper builds) and
keeps it if better, then runs exact block-reassignment passes (every row of a block of nearby rows
releases one match; the released matches are redistributed by an optimal assignment, which
covers every 2-opt move and cyclic exchange among the released matches); the paper's 2-opt
ILS then continues from the result for the rest of the budget. Because the construction does not
depend on the start, the result depends little on which heuristic started it; the start remains
the reference for the RPI (eq. 9) and the fallback. Measured (docs/engines/ils.md): at large k the
2-opt search alone stalls (census 10k, k = 20: 2.8 % GCP RPI over k-member in 60 s), the assignment
search reaches 12.6 %.

Budget: deterministic work, not wall time. The assignment phase stops after ``passes`` passes (or
earlier when a rotation of passes stalls), the descent runs to its local optimum, the ILS after
``max_iterations`` iterations; so the same batch, parameters and seed give the same release whatever
the machine load. ``time_limit`` is a safety cap only: if it binds first, ``diagnostics
["budget_cap_hit"]`` is true. With ``max_iterations=None`` the ILS runs until the cap (anytime mode,
flagged the same way). It never returns a worse solution than its start. Interpretations are
listed in :mod:`core.engines.hetero.search`, :mod:`core.engines.hetero.reassign` and docs/engines/ils.md.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from core.encoding import EncodedBatch
from core.engines.base import BandsParams, Engine, Progress, Release, no_progress
from core.engines.hetero.assign_search import AssignSearch
from core.engines.hetero.common import check_k_only
from core.engines.hetero.data import HeteroData, hetero_data, nested_data
from core.engines.hetero.fallback import nested_with_fallback
from core.engines.hetero.graph import candidates, regular_from_clusters
from core.engines.hetero.kmember import kmember_cls
from core.engines.hetero.lgreedy import lgreedy_cls
from core.engines.hetero.objective import clustering_objective, matching_objective
from core.engines.hetero.release import heterogeneous_release
from core.engines.hetero.runner import Searcher
from core.errors import InfeasibleError, ParamsError

TIME_CAP_S = 300.0  # safety cap only (a 10,000-row window spends ~8 s of one core at the default budget)
MAX_PASSES = 40  # deterministic work budget, docs/engines/ils.md "Budget"
MAX_ITERATIONS = 512


class ILSParams(BandsParams):
    objective: Literal["gcp", "sil"] = Field(default="gcp", description="information loss to minimise: gcp | sil")
    start: str = Field(default="kmember", description="initial homogeneous solution: kmember | lgreedy | "
                                                      "any engine returning classes without suppression")
    time_limit: float = Field(default=TIME_CAP_S, ge=0,
                              description="safety cap in wall seconds, not the budget (the budget is passes and "
                                          "max_iterations); if it binds the release says so "
                                          "(diagnostics budget_cap_hit); 0 = no cap")
    max_iterations: int | None = Field(default=MAX_ITERATIONS, ge=0,
                                       description="work budget: ILS iterations after the first descent; "
                                                   "None = until the time_limit cap (not reproducible)")
    perturbation: int = Field(default=1, ge=1, description="random swaps per perturbation (n of §5.4)")
    neighbourhood: Literal["knn", "full"] = Field(default="knn", description="partner rows of a move: knn | full")
    candidates: int = Field(default=64, ge=1, description="nearest rows per row in the knn neighbourhood")
    slack: float = Field(default=0.0, ge=0, description="accept a local optimum up to (1 + slack) x the incumbent")
    search: Literal["assign", "2opt"] = Field(
        default="assign", description="assign: block-assignment construction and passes, then the 2-opt ILS | "
                                      "2opt: the paper's 2-opt ILS only")
    block_size: int = Field(default=800, ge=2, description="rows per block of the assignment moves (assign search)")
    assign_share: float = Field(default=0.75, ge=0, le=1,
                                description="share of the time_limit cap for construction and passes (assign search)")
    passes: int | None = Field(default=MAX_PASSES, ge=0,
                               description="work budget: most block-reassignment passes (assign search; fewer when "
                                           "passes stall); None = until the stall or the cap")

    @model_validator(mode="after")
    def _bounded(self) -> ILSParams:
        if self.time_limit == 0 and self.max_iterations is None:
            raise ValueError("give time_limit or max_iterations (the search is anytime and needs a stop)")
        return self


def start_clusters(batch: EncodedBatch, data: HeteroData, params: ILSParams, rng: np.random.Generator,
                   progress: Progress = no_progress) -> np.ndarray:
    """Cluster id per row of the initial homogeneous solution."""
    if params.start == "kmember":
        return kmember_cls(data, params.k, rng, progress)
    if params.start == "lgreedy":
        return lgreedy_cls(data, params.k, progress=progress)
    from core.engines.registry import get_engine, make_params

    if params.start == "ils":
        raise ParamsError("engine 'ils' parameter 'start': must name a homogeneous engine, not 'ils'")
    eng = get_engine(params.start)
    rel = eng.anonymize(batch, make_params(eng, {"k": params.k}), rng)
    if len(rel.suppressed):
        raise ParamsError(f"engine 'ils' parameter 'start': '{params.start}' suppressed rows; the start must "
                          "release every row")
    cls = pd.Series(np.asarray(rel.class_ids), index=rel.rows.index).reindex(batch.frame.index)
    if cls.isna().any():
        raise ParamsError(f"engine 'ils' parameter 'start': '{params.start}' did not release every row")
    return pd.factorize(cls)[0].astype(np.int64)


class ILSEngine(Engine[ILSParams]):
    name = "ils"
    summary = "iterated local search over k-regular bipartite graphs (heterogeneous k-anonymity, GCP or SIL)"
    paper = "Heterogeneous k-anonymity with iterated local search (ILS + 2-opt); Doka et al. 2015"
    Params = ILSParams
    models = ("k",)
    linking_exposed = True  # measured by bench/linking_attack.py (docs/privacy.md)
    work_budgets: ClassVar[Mapping[str, int]] = {"max_iterations": 1, "passes": 1}

    def anonymize(self, batch: EncodedBatch, params: ILSParams, rng: np.random.Generator,
                  progress: Progress = no_progress) -> Release:
        started = time.perf_counter()
        check_k_only(self, batch, params)
        if params.bands == "free" or not params.nesting_fallback:
            return self._run(batch, params, frozenset(), rng, started, progress)
        return nested_with_fallback(self.name, batch, params, rng,
                                    lambda p, free, r, prog: self._run(batch, p, free, r, started, prog), started,
                                    progress, one_at_a_time=False)

    def _run(self, batch: EncodedBatch, params: ILSParams, free_qis: frozenset[str], rng: np.random.Generator,
             started: float, progress: Progress) -> Release:
        """One search and its release; with nested bands the QIs of ``free_qis`` are released free."""
        data = hetero_data(batch, sets=params.bands == "free")
        sdata = nested_data(batch, free_qis) if params.bands == "nested" else data  # what the search minimises
        cls = start_clusters(batch, sdata, params, rng, lambda d, msg: progress(0.0, f"start {params.start}: {msg}"))
        if np.bincount(np.unique(cls, return_inverse=True)[1]).min() < params.k:
            raise InfeasibleError(f"start solution '{params.start}' has a class smaller than k={params.k}")
        homogeneous = clustering_objective(sdata, cls, params.objective)
        matches = regular_from_clusters(cls, params.k, rng)
        start_matches = matches.copy()
        t_start = time.perf_counter() - started
        size = params.candidates if params.neighbourhood == "knn" else 0
        cand = candidates(sdata, size, params.objective, rng)
        t_cand = time.perf_counter() - started - t_start
        initial = matching_objective(sdata, matches, params.objective)
        budget = None if params.time_limit == 0 else max(params.time_limit - (time.perf_counter() - started), 0.0)
        t_before = time.perf_counter() - started
        assign = None
        if params.search == "assign" and params.k > 1:
            assign = AssignSearch(sdata, matches, params.objective, cand, params.block_size, rng)
            phase_end = np.inf if budget is None else time.perf_counter() + budget * params.assign_share

            def report_assign(elapsed: float, msg: str) -> None:
                done = elapsed / budget if budget else 0.0
                progress(min(done, 0.99), f"{msg}: {params.objective} {assign.objective():.5f}")

            assign.run(phase_end, params.passes, report_assign)
            matches = assign.M
        t_assign = time.perf_counter() - started - t_before
        remaining = None if budget is None else max(params.time_limit - (time.perf_counter() - started), 0.0)
        search = Searcher(sdata, matches, params.objective, cand, int(rng.integers(1, 2**63 - 1)),
                          params.perturbation, params.slack)

        def report(elapsed: float, msg: str) -> None:
            done = (t_assign + elapsed) / budget if budget else 0.0
            progress(min(done, 0.99), f"2-opt {msg}: {params.objective} {search.objective():.5f}")

        counters = search.run(remaining, params.max_iterations, report)
        final = search.objective()
        result = search.matches.copy()
        if final > initial:  # never return worse than the start (guards against rounding)
            result, final = start_matches, initial
        progress(1.0, "done")
        diag: dict[str, Any] = {
            "objective": params.objective, "objective_value": final, "start_engine": params.start,
            "start_homogeneous_objective": homogeneous, "start_objective": initial,
            "rpi_vs_start_percent": 100.0 * (homogeneous - final) / homogeneous if homogeneous > 0 else 0.0,
            "descent_complete": bool(counters.descent_done), "iterations": counters.iterations,
            "accepted": counters.accepted, "moves_evaluated": counters.descent_evals + counters.ils_evals,
            "moves_applied": counters.descent_moves + counters.ils_moves,
            "start_time_s": round(t_start, 4), "candidates_time_s": round(t_cand, 4),
            "search": params.search, "budget_cap_hit": bool(counters.cap_hit or (assign and assign.counters.cap_hit)),
            "work_budget": {"passes": params.passes, "max_iterations": params.max_iterations},
            "trace": [(round(t + t_before, 4), float(v)) for t, v in (assign.counters.trace if assign else [])]
                     + [(round(t + t_before + t_assign, 4), float(v)) for t, v in counters.trace],
        }
        if assign is not None:
            ac = assign.counters
            diag.update({"construction_objective": ac.construct_objective, "construction_used": ac.construct_used,
                         "construction_time_s": round(ac.construct_s, 4), "assign_passes": ac.passes,
                         "assign_blocks": ac.blocks, "assign_stalled": ac.stalled,
                         "assign_objective": assign.objective(), "assign_time_s": round(t_assign, 4)})
        return heterogeneous_release(self.name, batch, data, result, params, started, diag, free_qis)
