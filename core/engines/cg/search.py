"""The anytime search shared by CG-Kanon and CG-Diverse.

Phases (a valid release exists after phase 1 and every later step keeps one):

1. **Start.** Two locality-preserving orderings of the rows (k-d tree leaf orders, the second with
   randomized split choices). The starting solution cuts the first ordering into consecutive
   classes of k_min rows (CG-Diverse: chunks lacking l_min distinct offences go to the top class).
2. **Balance.** Exact dynamic programming splits the ordering into classes of k_min..cap rows
   minimising (1 - lambda) * loss + lambda * privacy term; bisection on lambda looks for the point
   where the two normalised terms meet, i.e. the minimum of max(privacy, loss) (eq. 7 / eq. 9)
   over these segmentations. Every segmentation is a valid solution; the best is kept.
3. **Improve.** Best-improvement local search in class space: each tuple may move to, or swap
   with a tuple of, a class found among its neighbours in either ordering (and, for CG-Diverse,
   move into or out of the top class), whenever that lowers max(pr, lm) + eps * (pr + lm). Sweeps
   repeat in a seeded random order. When a sweep moves fewer than 2 % of the tuples, the classes'
   own order (classes by the mean position of their members) is re-segmented by the dynamic
   programme near the current lambda, which merges, splits and shifts neighbouring classes at once;
   the result replaces the state only if it is better. The search stops when a sweep over every
   tuple and a re-segmentation find nothing (converged) or after ``max_iterations`` sweeps: a
   deterministic work budget, so the same batch, parameters and seed give the same release
   whatever the machine load. ``time_limit`` is only a safety cap; if it binds first the result
   says so (``info["budget_cap_hit"]``) and then depends on the machine's speed.

The loss curve records (seconds since start, objective, loss, privacy term, CPU seconds) after
every improvement; the engines expose it in ``Release.diagnostics``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.engines.base import Progress, no_progress
from core.engines.cg.params import CGParams
from core.engines.cg.problem import Problem, kd_order
from core.engines.cg.state import DIVERSE, Segmenter, Setup, State
from core.errors import InfeasibleError

SLICE = 2048  # tuples per kernel call (granularity of budget checks and curve points)
SETTLED = 0.02  # a sweep moving fewer than this fraction of the tuples triggers a re-segmentation


@dataclass
class SearchResult:
    state: State
    # (wall seconds since start, objective, lm, privacy term, CPU seconds of this process since start)
    curve: list[tuple[float, float, float, float, float]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


class Clock:
    """Wall time since ``started`` and the safety cap; remembers whether the cap ever bound."""

    def __init__(self, started: float, budget: float | None) -> None:
        self.started, self.budget, self.hit = started, budget, False

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def out(self) -> bool:
        if self.budget is not None and self.elapsed() >= self.budget:
            self.hit = True
        return self.hit


def initial_assignment(p: Problem, s: Setup, order: np.ndarray) -> tuple[np.ndarray, int]:
    """Consecutive chunks of k_min rows along ``order`` (the last chunk takes the remainder)."""
    n_cls = max(p.n // s.kmin, 1)
    chunk = np.minimum(np.arange(p.n) // s.kmin, n_cls - 1)
    cls = np.empty(p.n, np.int64)
    cls[order] = chunk
    if p.n - (n_cls - 1) * s.kmin > s.cap:  # tiny cap: rows beyond it are skipped (suppressed / top class)
        over = np.flatnonzero(chunk == n_cls - 1)[s.cap:]
        cls[order[over]] = n_cls
    if s.mode == DIVERSE:
        cnt = np.zeros((n_cls + 1, p.m), np.int64)
        np.add.at(cnt, (cls, p.sens), 1)
        bad = np.flatnonzero((cnt[:n_cls] > 0).sum(axis=1) < s.lmin)
        cls[np.isin(cls, bad)] = n_cls
    return compact(cls, n_cls)


def compact(cls: np.ndarray, n_cls: int) -> tuple[np.ndarray, int]:
    """Renumber the non-empty regular classes 0..C-1; the top/skip class becomes C."""
    used = np.unique(cls[cls < n_cls])
    remap = np.full(n_cls + 1, len(used), np.int64)
    remap[used] = np.arange(len(used))
    return remap[cls], len(used)


def repair_top(p: Problem, s: Setup, cls: np.ndarray, n_cls: int) -> tuple[np.ndarray, int]:
    """CG-Diverse: make a non-empty top class valid by merging whole regular classes into it.

    Classes that add missing offences come first, then the cheapest (fewest rows); this is the
    paper's "generalized to the highest level (merged), not suppressed".
    """
    top = cls == n_cls
    while top.any():
        present = np.zeros(p.m, bool)
        present[p.sens[top]] = True
        if top.sum() >= s.kmin and present.sum() >= s.lmin:
            break
        regular = np.flatnonzero(np.bincount(cls[~top], minlength=n_cls)[:n_cls])
        if len(regular) == 0:
            raise InfeasibleError(f"cannot form a class with k_min={s.kmin} rows and l={s.lmin} distinct "
                                  "offences from this batch", reason="infeasible")
        rows = ~top
        newv = np.zeros(n_cls, np.int64)
        np.add.at(newv, cls[rows], ~present[p.sens[rows]])
        sizes = np.bincount(cls[rows], minlength=n_cls)
        cand = regular[np.lexsort((sizes[regular], -np.minimum(newv[regular], 1)))]
        cls = np.where(cls == cand[0], n_cls, cls)
        top = cls == n_cls
    return compact(cls, n_cls)


def class_order(st: State, p1: np.ndarray) -> np.ndarray:
    """Rows grouped by class, classes by the mean position of their members in the first ordering
    (rows outside regular classes stand alone at their own position)."""
    cls = st.cls
    regular = (cls >= 0) & (cls < st.C)
    mean_pos = np.bincount(cls[regular], weights=p1[regular], minlength=st.C) / np.maximum(st.size[:st.C], 1)
    key = np.where(regular, np.r_[mean_pos, 0.0][np.where(regular, cls, st.C)], p1)
    return np.lexsort((p1, key))


def make_state(p: Problem, s: Setup, cls: np.ndarray, n_cls: int) -> State:
    if s.mode == DIVERSE:
        cls, n_cls = repair_top(p, s, cls, n_cls)
    return State(p, s, cls, n_cls)


def run_search(p: Problem, s: Setup, params: CGParams, rng: np.random.Generator, started: float,
               progress: Progress = no_progress, seed: np.ndarray | None = None) -> SearchResult:
    """The three phases above. ``seed`` (optional): class id per row of another valid partition
    (CG-Diverse: Mondrian's); its classes, rows inside a class in the first ordering, form a third
    ordering that the balance phase also segments, and it becomes the first ordering if it wins."""
    clock = Clock(started, params.time_limit or None)
    segmentation = Segmenter(p, s)
    cpu0 = time.process_time()
    o1 = kd_order(p, rng)
    o2 = kd_order(p, rng, noise=1.0)
    best = make_state(p, s, *initial_assignment(p, s, o1))
    res = SearchResult(state=best)

    def record(state: State, always: bool = False) -> None:
        obj = state.objective()
        if always or not res.curve or obj < res.curve[-1][1] - 1e-12:
            lm, pr = float(state.tot[0]), s.privacy(float(state.tot[1]))
            res.curve.append((round(clock.elapsed(), 4), obj, lm, pr, round(time.process_time() - cpu0, 4)))

    record(best, always=True)
    res.info["start_objective"] = best.objective()

    def balance(order: np.ndarray, lo: float, hi: float, steps: int) -> tuple[State | None, float]:
        """Bisection on lambda over optimal segmentations of ``order``; the best state found."""
        found, lam_found = None, 0.5 * (lo + hi)
        for step in range(steps):
            lam = 0.5 * (lo + hi)
            state = make_state(p, s, *segmentation(order, lam))
            res.info["dp_runs"] = res.info.get("dp_runs", 0) + 1
            if found is None or state.objective() < found.objective() - 1e-12:
                found, lam_found = state, lam
            if s.privacy(float(state.tot[1])) > float(state.tot[0]):
                lo = lam
            else:
                hi = lam
            if hi - lo < 1e-3 or (step < steps - 1 and clock.out()):
                break
        return found, lam_found

    # phase 2: lambda bisection over optimal segmentations of o1
    steps = 12 if s.pr_scale > 0 else 1  # no privacy term (degraded cg-diverse): lambda is irrelevant
    state, lam = balance(o1, 0.0, 1.0, steps)
    if seed is not None:
        pos = np.empty(p.n, np.int64)
        pos[o1] = np.arange(p.n)
        o3 = np.lexsort((pos, seed))
        state3, lam3 = balance(o3, 0.0, 1.0, steps)
        res.info["seed_order_won"] = bool(state3 is not None and (
            state is None or state3.objective() < state.objective() - 1e-12))
        if res.info["seed_order_won"]:
            state, lam, o1 = state3, lam3, o3
    if state is not None and state.objective() < best.objective() - 1e-12:
        best = state
        record(best)
    progress(0.3, f"balanced: lambda={lam:.3f} objective={best.objective():.4f}")
    # phase 3: local search, re-segmenting the classes' own order whenever a sweep finds nothing
    p1, p2 = np.empty(p.n, np.int64), np.empty(p.n, np.int64)
    p1[o1], p2[o2] = np.arange(p.n), np.arange(p.n)
    sweeps, moves, resegmented, converged, full, tried = 0, 0, 0, False, False, False
    while sweeps < params.max_iterations and not clock.out():
        visit = rng.permutation(p.n)
        moved = 0
        for lo_i in range(0, p.n, SLICE):
            moved += best.sweep(visit[lo_i:lo_i + SLICE], o1, p1, o2, p2, params.neighbours, full)
            record(best)
            if lo_i + SLICE < p.n and clock.out():
                break
        sweeps += 1
        moves += moved
        progress(min(0.3 + 0.7 * sweeps / max(params.max_iterations, 1), 0.99),
                 f"sweep {sweeps}: {moved} moves, objective {best.objective():.4f}")
        quiet = moved == 0 and full
        if quiet or (moved < p.n * SETTLED and not tried):
            # the moves have (nearly) settled: re-segment the classes' own order optimally
            state, lam2 = balance(class_order(best, p1), max(lam - 0.125, 0.0), min(lam + 0.125, 1.0),
                                  6 if s.pr_scale > 0 else 1)
            if state is not None and state.objective() < best.objective() - 1e-9 * (1 + best.objective()):
                best, lam, full, tried = state, lam2, False, False
                resegmented += 1
                record(best)
                continue
            tried = True
            if quiet:
                converged = not clock.hit
                break
        full = moved == 0  # confirm a quiet sweep with a sweep that looks at every tuple
    res.info.update(lam=lam, resegmented=resegmented)
    res.state = best
    record(best, always=True)
    res.info.update(sweeps=sweeps, moves=moves, converged=converged,
                    stop="converged" if converged else ("time cap" if clock.hit else "max_iterations"),
                    work_budget={"max_sweeps": params.max_iterations}, budget_cap_hit=clock.hit,
                    search_s=round(clock.elapsed(), 4))
    return res
