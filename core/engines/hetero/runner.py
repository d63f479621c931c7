"""The anytime driver of the ILS kernels: state set-up, descent, ILS iterations, trace.

The numba kernels run in chunks of fixed size (so a run is deterministic for a seed and an
iteration budget, whatever the machine's speed); between chunks the driver checks the deadline
(a safety cap: ``Counters.cap_hit`` says when it ended the work early),
re-synchronizes the objective with the per-row terms and records a (time, objective) trace. The
solution is a valid k-regular matching after every move, so stopping at any chunk boundary is safe.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from core.engines.hetero.data import HeteroData
from core.engines.hetero.graph import inverse
from core.engines.hetero.search import ils_iterations, local_search
from core.engines.hetero.state import GCP, SIL, rebuild_all

DESCENT_CHUNK = 200_000  # moves evaluated per descent call
ILS_CHUNK = 128  # ILS iterations per call
LOG_ROWS = 200_000


@dataclass
class Counters:
    descent_evals: int = 0
    descent_moves: int = 0
    iterations: int = 0
    accepted: int = 0
    ils_evals: int = 0
    ils_moves: int = 0
    descent_done: bool = False
    cap_hit: bool = False  # the deadline stopped the descent or the ILS before its work budget
    trace: list[tuple[float, float]] = field(default_factory=list)


def make_state(data: HeteroData, matches: np.ndarray, objective: str) -> tuple[tuple, tuple]:
    """The (S, C) tuples of :mod:`core.engines.hetero.state` for a k-regular matching."""
    n, k = matches.shape
    dn, dc = data.dn, data.dc
    offs = data.cat_offsets
    M = np.ascontiguousarray(matches, dtype=np.int64).copy()
    S = (M, inverse(M), np.zeros((n, dn)), np.zeros((n, dn)), np.zeros((n, dn)), np.zeros((n, dn)),
         np.zeros((n, dn)), np.zeros((n, int(offs[-1])), dtype=np.int64), np.zeros((n, dc), dtype=np.int64),
         np.zeros((n, dc, k + 1), dtype=np.int64), np.zeros((n, dc), dtype=np.int64), np.zeros(n),
         np.zeros((n, k)), np.zeros(n))
    C = (np.ascontiguousarray(data.xn, dtype=np.float64), np.ascontiguousarray(data.xc, dtype=np.int64), offs,
         data.inv_range.astype(np.float64), data.cat_den.astype(np.float64), (1.0 / data.num_std).astype(np.float64),
         (1.0 / data.cat_std).astype(np.float64), np.int64(SIL if objective == "sil" else GCP))
    rebuild_all(S, C)
    return S, C


class Searcher:
    """Iterated local search over one k-regular matching (mutated in place)."""

    def __init__(self, data: HeteroData, matches: np.ndarray, objective: str, cand: np.ndarray, seed: int,
                 perturbation: int = 3, slack: float = 0.0) -> None:
        self.data = data
        self.S, self.C = make_state(data, matches, objective)
        self.cand = np.ascontiguousarray(cand, dtype=np.int64)
        self.n, self.k = matches.shape
        self.norm = float(data.d * self.n)
        self.rng = np.array([seed], dtype=np.uint64)
        self.queue = np.arange(self.n, dtype=np.int64)
        self.inq = np.ones(self.n, dtype=np.bool_)
        self.qlen = np.array([self.n], dtype=np.int64)
        self.perturbation = perturbation
        self.slack = slack
        self.log = np.zeros((max(LOG_ROWS, 4 * perturbation), 4), dtype=np.int64)
        self.no_log = np.zeros((0, 4), dtype=np.int64)
        self.logn = np.zeros(1, dtype=np.int64)
        self.cur = np.array([self.total()])
        self.best = self.cur.copy()
        self.best_m = self.S[0].copy()
        self.counters = Counters()

    def total(self) -> float:
        return float(self.S[11].sum())

    def objective(self) -> float:
        """Current GCP or SIL (eq. 4 / eq. 7)."""
        return self.total() / self.norm

    @property
    def matches(self) -> np.ndarray:
        return self.S[0]

    def run(self, time_limit: float | None, max_iterations: int | None,
            on_chunk: Callable[[float, str], None] | None = None) -> Counters:
        """Descend to a local optimum, then iterate; stop at the deadline or iteration budget."""
        started = time.perf_counter()
        deadline = np.inf if time_limit is None else started + time_limit
        c = self.counters
        c.trace.append((0.0, self.objective()))

        def mark(msg: str) -> None:
            now = time.perf_counter()
            self.cur[0] = self.total()
            c.trace.append((now - started, self.cur[0] / self.norm))
            if on_chunk is not None:
                on_chunk(now - started, msg)

        while self.qlen[0] > 0 and time.perf_counter() < deadline:
            e, m, _ = local_search(self.S, self.C, self.cand, self.queue, self.inq, self.qlen, self.rng,
                                   DESCENT_CHUNK, self.no_log, self.logn)
            c.descent_evals += e
            c.descent_moves += m
            mark("descent")
        c.descent_done = self.qlen[0] == 0
        c.cap_hit = not c.descent_done
        self.best[0] = self.cur[0] = self.total()
        self.best_m[:] = self.S[0]
        track = self.slack > 0
        while c.descent_done and time.perf_counter() < deadline and (
                max_iterations is None or c.iterations < max_iterations) and self.k > 1 and self.n > 2:
            todo = ILS_CHUNK if max_iterations is None else min(ILS_CHUNK, max_iterations - c.iterations)
            it, acc, e, m = ils_iterations(self.S, self.C, self.cand, todo, self.perturbation, self.slack,
                                           self.queue, self.inq, self.qlen, self.rng, self.log, self.logn,
                                           self.cur, self.best, self.best_m, track)
            c.iterations += it
            c.accepted += acc
            c.ils_evals += e
            c.ils_moves += m
            mark("ils")
        if c.descent_done and self.k > 1 and self.n > 2 and (max_iterations is None or c.iterations < max_iterations):
            c.cap_hit = True  # only the deadline ends the loop before the budget
        if track and self.best[0] < self.total() - 1e-9:
            self.S[0][:] = self.best_m
            self.S[1][:] = inverse(self.best_m)
            rebuild_all(self.S, self.C)
            c.trace.append((time.perf_counter() - started, self.objective()))
        return c
