"""The search state of the CG engines: a valid assignment of tuples to classes, with its totals."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.engines.cg.kernels import (
    criticals_all,
    fill_members,
    objective,
    refresh_all,
    segment,
    segment_table,
    segment_with,
    sweep,
)
from core.engines.cg.problem import Problem

KANON, DIVERSE = 0, 1
FIRST_IMPROVEMENT = False  # best improvement per tuple measured slightly better per CPU second
SUPPRESSED = -1
TABLE_CELLS = 4_000_000  # most (start, size) cells a segmentation table may hold (3 arrays, ~68 MB)


@dataclass(frozen=True)
class Setup:
    """Constants of one run: mode, bounds and the normalisation of both objective terms.

    Loss: lm = sum_d sum_a w_a IL_d(a) / n with sum_a w_a = 1 (suppressed / top rows cost 1).
    CG-Kanon privacy: SP_norm = (SP_tot - S/cap) / (S/k_min - S/cap) with S the batch's total
    severity; CG-Diverse privacy: P_norm = (P - 1/l_target) / (1 - 1/l_target) with
    P = sum_d S_d * freq(offence of d in its class) / S.
    """

    mode: int
    kmin: int
    cap: int
    lmin: int
    ase_rule: bool
    ltarget: float
    lm_scale: float
    pr_scale: float
    pr_offset: float
    eps: float
    skip_lm: np.ndarray  # per-row loss part of skipping a row in the segmentation (suppress / top class)
    skip_pr: np.ndarray  # per-row privacy part of the same

    def objective(self, lm: float, pr: float) -> float:
        """The quantity minimised: max(pr, lm) + eps * (pr + lm), i.e. 1 / fitness (eq. 7 / eq. 9)."""
        return float(objective(lm, pr, self.pr_offset, self.eps))

    def privacy(self, pr_raw: float) -> float:
        """The normalised privacy term of a total, clipped to [0, 1] for reporting."""
        return float(min(max(pr_raw - self.pr_offset, 0.0), 1.0))


class Segmenter:
    """Optimal segmentations of one ordering for several values of lambda (the bisection's steps).

    The classes an ordering can be cut into (their validity, loss and privacy term) do not depend on
    lambda, so they are computed once per ordering (:func:`~core.engines.cg.kernels.segment_table`)
    and each lambda only runs the dynamic programme over them; the split is the one
    :func:`~core.engines.cg.kernels.segment` finds, to the last bit. Orderings whose table would
    exceed :data:`TABLE_CELLS` cells, and runs without a privacy term (lambda is irrelevant, one
    segmentation per ordering), go to ``segment`` directly.
    """

    def __init__(self, p: Problem, s: Setup) -> None:
        self.p, self.s = p, s
        self.order: np.ndarray | None = None
        self.table: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def __call__(self, order: np.ndarray, lam: float) -> tuple[np.ndarray, int]:
        """Class per row from the optimal segmentation of ``order`` (rows skipped: class ``n_classes``)."""
        p, s = self.p, self.s
        if s.pr_scale == 0 or p.n * (s.cap - s.kmin + 1) > TABLE_CELLS:  # one lambda only, or too large
            return dp_assignment(p, s, order, lam)
        if self.order is None or not np.array_equal(self.order, order):
            self.order = order.copy()
            self.table = segment_table(order, s.kmin, s.cap, s.mode, s.lmin, s.ase_rule, s.ltarget, s.pr_scale,
                                       p.kind, p.xr, p.span, p.gr, p.height, p.cost_flat, p.cost_off, p.w, p.sens,
                                       p.sev, p.m)
        assert self.table is not None
        skip = (1.0 - lam) * s.skip_lm + lam * s.skip_pr
        per_pos, n_cls = segment_with(p.n, s.kmin, s.cap, lam, skip, s.lm_scale, order, *self.table)
        return _classes(p, order, per_pos, n_cls)


def dp_assignment(p: Problem, s: Setup, order: np.ndarray, lam: float) -> tuple[np.ndarray, int]:
    """Class per row from the optimal segmentation of ``order`` (rows skipped: class ``n_classes``)."""
    skip = (1.0 - lam) * s.skip_lm + lam * s.skip_pr
    per_pos, n_cls = segment(order, s.kmin, s.cap, lam, s.mode, s.lmin, s.ase_rule, s.ltarget, skip,
                             s.lm_scale, s.pr_scale, p.kind, p.xr, p.span, p.gr, p.height, p.cost_flat, p.cost_off,
                             p.w, p.sens, p.sev, p.m)
    return _classes(p, order, per_pos, n_cls)


def _classes(p: Problem, order: np.ndarray, per_pos: np.ndarray, n_cls: int) -> tuple[np.ndarray, int]:
    cls = np.empty(p.n, np.int64)
    cls[order] = np.where(per_pos < 0, n_cls, per_pos)
    return cls, int(n_cls)


class State:
    """Classes 0..C-1 are regular (k_min..cap rows); class C is the top class (CG-Diverse) or the
    suppressed rows (CG-Kanon, where ``cls`` holds -1 for them)."""

    def __init__(self, p: Problem, s: Setup, cls: np.ndarray, n_classes: int) -> None:
        self.p, self.s = p, s
        top = n_classes
        self.C = top
        if s.mode == KANON:
            cls = np.where(cls == top, SUPPRESSED, cls)
        self.cls = cls.astype(np.int64).copy()
        members = self.cls >= 0
        self.size = np.bincount(self.cls[members], minlength=top + 1).astype(np.int64)
        self.sums = np.bincount(self.cls[members], weights=p.sev[members], minlength=top + 1)
        flat = np.bincount(self.cls[members] * p.m + p.sens[members], minlength=(top + 1) * p.m)
        self.cnt = flat.reshape(top + 1, p.m).astype(np.int64)
        self.distinct = (self.cnt > 0).sum(axis=1).astype(np.int64)
        self.qv = (self.cnt.astype(float) ** 2 * p.sev_value[None, :]).sum(axis=1)
        width = max(int(self.size[:top].max()) if top else 1, s.cap, 1)
        self.mem = np.full((top, width), -1, np.int64)
        self.pos = np.full(p.n, -1, np.int64)
        fill_members(self.cls, top, self.mem, self.pos)
        self.il = np.zeros(top)
        self.cmn = np.zeros((top, p.d))
        self.cmx = np.zeros((top, p.d))
        self.clv = np.zeros((top, p.d), np.int64)
        self.cref = np.full(top, -1, np.int64)
        refresh_all(top, self.mem, self.size, self.il, self.cmn, self.cmx, self.clv, self.cref, p.kind, p.xr, p.span,
                    p.gr, p.height, p.cost_flat, p.cost_off, p.w)
        # critical members (kernels._criticals): computed before the first sweep, most states are never searched
        self.crit = np.full((top, p.d, 2), -1, np.int64)
        self.lv2 = np.zeros((top, p.d), np.int64)
        self.ext2 = np.zeros((top, p.d, 2))
        self.critical = False
        self.tot = np.array(self.exact_totals())
        self.cver = np.zeros(top + 1, np.int64)
        self.tev = np.full(p.n, -1, np.int64)
        self.clock = np.zeros(1, np.int64)

    @property
    def suppressed(self) -> int:
        return int((self.cls == SUPPRESSED).sum())

    @property
    def top_size(self) -> int:
        return int(self.size[self.C]) if self.s.mode == DIVERSE else 0

    def exact_totals(self) -> tuple[float, float]:
        """(loss, unshifted privacy term) recomputed from the class arrays."""
        s, top = self.s, self.C
        size = self.size[:top].astype(float)
        lm = float((size * self.il).sum() + self.top_size + self.suppressed) * s.lm_scale
        if s.mode == KANON:
            pr = float((self.sums[:top] * (1.0 / size - 1.0 / s.cap)).sum()) * s.pr_scale
        else:
            sizes = self.size.astype(float)
            pr = float((self.qv[sizes > 0] / sizes[sizes > 0]).sum()) * s.pr_scale
        return lm, pr

    def objective(self) -> float:
        return self.s.objective(float(self.tot[0]), float(self.tot[1]))

    def sweep(self, visit: np.ndarray, o1: np.ndarray, p1: np.ndarray, o2: np.ndarray, p2: np.ndarray,
              radius: int, full: bool = False) -> int:
        p, s = self.p, self.s
        if not self.critical:
            criticals_all(self.C, self.mem, self.size, p.kind, p.xr, p.gr, p.height, self.cmn, self.cmx, self.clv,
                          self.crit, self.lv2, self.ext2)
            self.critical = True
        moved = sweep(visit, o1, p1, o2, p2, radius, self.cls, self.pos, self.mem, self.size, self.sums, self.qv,
                      self.cnt, self.distinct, self.il, self.cmn, self.cmx, self.clv, self.cref, self.crit, self.lv2,
                      self.ext2, p.nests, self.tot, self.cver,
                      self.tev, self.clock, full, FIRST_IMPROVEMENT, s.mode,
                      s.kmin, s.cap, s.lmin, s.ase_rule, s.ltarget, s.lm_scale, s.pr_scale, s.pr_offset, s.eps,
                      p.kind, p.xr, p.span, p.gr, p.height, p.cost_flat, p.cost_off, p.w, p.sens, p.sev)
        self.tot[:] = self.exact_totals()
        return int(moved)

    def class_of_rows(self) -> np.ndarray:
        """Class per row: regular classes keep their id, the top class is C, suppressed rows -1."""
        return self.cls.copy()
