"""The assignment phase of ``ils`` (``search = "assign"``): construction, then block-reassignment passes.

1. **Construction.** A k-regular graph built from scratch by block assignment
   (:func:`core.engines.hetero.reassign.construct`, Doka et al.'s method on blocks of nearby rows).
   It replaces the start only when it is better; the start stays the incumbent otherwise.
2. **Passes.** Each pass cuts the rows into blocks (the planner's next strategy), lets every row of
   a block release one match (its costliest one on even passes for GCP, a random one otherwise)
   and redistributes the released matches by an optimal assignment
   (:func:`core.engines.hetero.reassign.reassign_block`). A pass never makes the objective worse.
   Passes stop at the phase deadline, after ``max_passes``, or when a full rotation of the three
   block strategies gained less than ``STALL`` (relative).

The 2-opt ILS of the paper (:class:`core.engines.hetero.runner.Searcher`) continues from the
result; see :mod:`core.engines.hetero.ils`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from core.engines.hetero.blocks import STRATEGIES, BlockPlanner
from core.engines.hetero.data import HeteroData
from core.engines.hetero.objective import matching_objective
from core.engines.hetero.reassign import KernelConstants, construct, pick_slots, reassign_block, removal_gains

STALL = 1e-4  # a rotation of passes gaining less than this share of the objective ends the phase


@dataclass
class AssignCounters:
    construct_s: float = 0.0
    construct_objective: float | None = None  # None: not built (too few rows or out of time)
    construct_used: bool = False
    passes: int = 0
    blocks: int = 0
    stalled: bool = False
    cap_hit: bool = False  # the deadline ended the construction or the passes before their budget
    trace: list[tuple[float, float]] = field(default_factory=list)


def kernel_constants(data: HeteroData) -> KernelConstants:
    """The constant arrays of :func:`core.engines.hetero.reassign.block_costs`."""
    return (np.ascontiguousarray(data.xn, dtype=np.float64), np.ascontiguousarray(data.xc, dtype=np.int64),
            data.cat_offsets, data.inv_range.astype(np.float64), data.cat_den.astype(np.float64),
            (1.0 / data.num_std).astype(np.float64), (1.0 / data.cat_std).astype(np.float64))


class AssignSearch:
    """Construction and block-reassignment passes over a k-regular matching ``matches`` (n, k)."""

    def __init__(self, data: HeteroData, matches: np.ndarray, objective: str, cand: np.ndarray, block_size: int,
                 rng: np.random.Generator) -> None:
        self.data = data
        self.M = np.ascontiguousarray(matches, dtype=np.int64).copy()
        self.n, self.k = self.M.shape
        self.objective_name = objective
        self.code = 1 if objective == "sil" else 0
        self.norm = float(data.d * self.n) if data.d and self.n else 1.0
        self.consts = kernel_constants(data)
        self.planner = BlockPlanner(data, objective, cand, block_size, 2 * max(self.k - 1, 1))
        self.rng = rng
        self.head = np.full(self.n, -1, dtype=np.int64)
        self.total = matching_objective(data, self.M, objective) * self.norm
        self.counters = AssignCounters()

    def objective(self) -> float:
        return self.total / self.norm

    def run(self, deadline: float, max_passes: int | None,
            on_pass: Callable[[float, str], None] | None = None) -> AssignCounters:
        """Construct, then pass until ``deadline`` (``time.perf_counter``), ``max_passes`` or a stall."""
        started = time.perf_counter()
        c = self.counters
        c.trace.append((0.0, self.objective()))
        if self.k < 2 or self.n < 2:
            return c
        built = construct(self.n, self.k, self.planner, self.consts, self.code, self.rng, deadline)
        c.construct_s = time.perf_counter() - started
        if built is None and time.perf_counter() > deadline:
            c.cap_hit = True
        if built is not None:
            value = matching_objective(self.data, built, self.objective_name) * self.norm
            c.construct_objective = value / self.norm
            if value < self.total:
                self.M, self.total, c.construct_used = built, value, True
            c.trace.append((c.construct_s, self.objective()))
        if on_pass is not None:
            on_pass(time.perf_counter() - started, "construction")
        rotation_start = self.total
        while time.perf_counter() < deadline and (max_passes is None or c.passes < max_passes):
            strategy, blocks = self.planner.next(self.rng)
            gains = removal_gains(self.M, *self.consts[:5]) if self.code == 0 and c.passes % 2 == 0 else None
            for blk in blocks:
                if time.perf_counter() > deadline:
                    c.cap_hit = True
                    break
                slots = pick_slots(self.M, blk, gains, self.rng)
                self.total -= reassign_block(self.M, blk, slots, self.consts, self.code, self.head)
                c.blocks += 1
            c.passes += 1
            now = time.perf_counter() - started
            c.trace.append((now, self.objective()))
            if on_pass is not None:
                on_pass(now, f"reassignment pass {c.passes} ({strategy})")
            if c.passes % len(STRATEGIES) == 0:
                if rotation_start - self.total < STALL * max(rotation_start, 1e-300):
                    c.stalled = True
                    break
                rotation_start = self.total
        if not c.stalled and (max_passes is None or c.passes < max_passes):
            c.cap_hit = True  # only the deadline ends the passes before the budget or a stall
        return c
