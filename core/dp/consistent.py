"""A non-negative view of one release's count tables whose shared margins agree (post-processing only).

The published tables are independent unbiased draws: the offence table and the offence margin of
region × offence estimate the same counts with different noise, and near-empty cells can be negative.
:func:`consistent_view` turns one release's tables into tables an analyst can read side by side, in
three steps, using nothing but the published tables (no data access, so no privacy cost):

1. **Least squares** (:func:`least_squares`, PriView's consistency step, Qardaji, Yang & Li 2014): for
   every set of columns two tables share (and the empty set, the total), the tables' margins on it are
   replaced by their inverse-variance weighted average (a margin cell summing c cells of a table whose
   cells have sd s has variance c s²), each table's difference spread evenly over the cells of each
   margin cell. Each such step is the orthogonal projection, in the metric Σ (x − y)² / s², onto the
   tables whose margins on that set agree, so cycling through the sets until nothing moves converges to
   the weighted least-squares estimate under all the constraints at once. Still unbiased; may be negative.
2. **Non-negativity** (PriView's "ripple": a negative cell is set to 0 and what that adds is taken back
   from its neighbours): within each cell of a table's finest shared margin (the shared column set with
   the most cells; the whole table if it shares none), the cells are replaced by the nearest
   non-negative cells with the same sum (x = max(y − λ, 0), λ per margin cell), then the tables are made
   consistent again (step 1), for up to 200 rounds, until no cell is below -1e-6; what is left below 0 is
   then set to 0 and the shared margins matched once more by scaling (each margin cell's cells multiplied
   by a common factor, which keeps them non-negative). This keeps the totals where step 1 put them,
   except where a margin cell is itself negative (raised to 0). Simply clipping negative cells at 0 and
   re-projecting would add mass: on a crime station-day of 600 reports it raised the common total by
   about 100 reports, ripple by about 25. Either way small cells of this view are biased upwards and
   large ones slightly downwards.
3. **Rounding** to integers, with the largest remainder method: the common total is rounded once, each
   table's finest shared margin (the shared column set with the most cells) is rounded to that total,
   and each table's cells are rounded to their margin cells.

What holds **exactly** in the result: every count is a non-negative integer; every table's total is the
same integer; two tables whose finest shared column set is the same (e.g. offence and region × offence
on offence, age band × sex and age band × sex × offence on age band × sex) have equal margins on it.
What holds **only approximately**: every other shared margin agrees to within the rounding (each cell
moved by less than 1, so a margin cell summing c cells of a table is within c of the common value,
typically within about √(c / 6)); before rounding, all shared margins agree to 1e-9 relative. The view
is not unbiased and states no interval (``ci95`` and ``sd`` are NaN): for inference use the published
counts and :meth:`CountTable.sum_ci95`. Rows outside a column's domain count in no table with that
column, so margins of such tables can truly differ; the view assumes every table counts the same rows,
as one release's tables from :func:`core.dp.plan.count_tables` do when every value is in its domain.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np

from core.dp.tables import CountTable

TOLERANCE = 1e-9  # relative disagreement of shared margins at which the least squares stops
MAX_SWEEPS = 10_000
NONNEGATIVE_ROUNDS = 200
Cols = tuple[str, ...]


class _Layout:
    """One release's tables as arrays with their axes in one column order and one domain order per column."""

    def __init__(self, tables: list[CountTable]) -> None:
        order = list(dict.fromkeys(c for t in tables for c in t.by))
        self.domains: dict[str, tuple[str, ...]] = {}
        self.cols: list[Cols] = []
        self.index: list[np.ndarray] = []  # per table: the original cell index at each canonical position
        self.sds = [float(t.sd) for t in tables]
        for t in tables:
            if len(set(t.by)) != len(t.by):
                raise ValueError(f"table {t.name}: a column appears twice")
            if not (math.isfinite(t.sd) and t.sd > 0):
                raise ValueError(f"table {t.name}: needs a positive noise sd (got {t.sd})")
            own = [tuple(dict.fromkeys(g[k] for g in t.groups)) for k in range(len(t.by))]
            if list(t.groups) != list(itertools.product(*own)):
                raise ValueError(f"table {t.name}: its cells are not the full product of its columns' domains")
            idx = np.arange(len(t.groups)).reshape([len(d) for d in own])
            for axis, (col, dom) in enumerate(zip(t.by, own, strict=True)):
                known = self.domains.setdefault(col, dom)
                if set(known) != set(dom) or len(known) != len(dom):
                    raise ValueError(f"tables disagree on the domain of {col}")
                idx = np.take(idx, [dom.index(v) for v in known], axis=axis)
            cols = tuple(sorted(t.by, key=order.index))
            self.index.append(np.transpose(idx, [t.by.index(c) for c in cols]))
            self.cols.append(cols)

    def arrays(self, tables: list[CountTable]) -> list[np.ndarray]:
        return [np.asarray(t.counts, dtype=float)[i] for t, i in zip(tables, self.index, strict=True)]

    def flat(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Back to each table's own cell order."""
        out = []
        for a, i in zip(arrays, self.index, strict=True):
            v = np.empty(a.size, dtype=a.dtype)
            v[i.ravel()] = a.ravel()
            out.append(v)
        return out

    def shared(self) -> list[tuple[Cols, list[int]]]:
        """Every column set two tables share (the empty set too) with the tables holding it, most cells first."""
        sets = {tuple(c for c in a if c in b) for a, b in itertools.combinations(self.cols, 2)}
        out = [(s, [i for i, c in enumerate(self.cols) if set(s) <= set(c)]) for s in sets]
        return sorted(out, key=lambda e: (-math.prod(len(self.domains[c]) for c in e[0]), e[0]))


def _margin(array: np.ndarray, cols: Cols, keep: Cols) -> np.ndarray:
    return array.sum(axis=tuple(k for k, c in enumerate(cols) if c not in keep))


def _spread(diff: np.ndarray, cols: Cols, keep: Cols) -> np.ndarray:
    """``diff`` (over the ``keep`` columns) as an array broadcasting over the table's other axes."""
    return np.expand_dims(diff, axis=tuple(k for k, c in enumerate(cols) if c not in keep))


def _target(arrays: list[np.ndarray], lay: _Layout, keep: Cols, members: list[int]) -> np.ndarray:
    """The inverse-variance weighted average of the members' margins on ``keep``."""
    weights = [1.0 / (lay.sds[i] ** 2 * (arrays[i].size // max(1, math.prod(len(lay.domains[c]) for c in keep))))
               for i in members]
    margins = [_margin(arrays[i], lay.cols[i], keep) for i in members]
    return np.asarray(sum(w * m for w, m in zip(weights, margins, strict=True)) / sum(weights))


def _project(arrays: list[np.ndarray], lay: _Layout, tolerance: float = TOLERANCE) -> list[np.ndarray]:
    """Weighted least-squares consistency by cyclic projections (step 1 of the module's docstring)."""
    arrays = [a.copy() for a in arrays]
    sets = [(s, m) for s, m in lay.shared() if len(m) > 1]
    scale = max(1.0, *(float(np.abs(a).max(initial=0.0)) for a in arrays))
    for _sweep in range(MAX_SWEEPS):
        worst = 0.0
        for keep, members in sets:
            target = _target(arrays, lay, keep, members)
            for i in members:
                diff = target - _margin(arrays[i], lay.cols[i], keep)
                worst = max(worst, float(np.abs(diff).max(initial=0.0)))
                arrays[i] += _spread(diff, lay.cols[i], keep) * (diff.size / arrays[i].size)
        if worst <= tolerance * scale:
            return arrays
    raise ArithmeticError(f"consistency did not converge in {MAX_SWEEPS} sweeps")


def _rake(arrays: list[np.ndarray], lay: _Layout, tolerance: float = TOLERANCE) -> list[np.ndarray]:
    """Match shared margins by scaling each margin cell's cells (keeps non-negative cells non-negative)."""
    arrays = [a.copy() for a in arrays]
    sets = [(s, m) for s, m in lay.shared() if len(m) > 1]
    scale = max(1.0, *(float(a.sum()) for a in arrays))
    for _sweep in range(MAX_SWEEPS):
        worst = 0.0
        for keep, members in sets:
            target = _target(arrays, lay, keep, members)
            for i in members:
                have = _margin(arrays[i], lay.cols[i], keep)
                worst = max(worst, float(np.abs(target - have).max(initial=0.0)))
                cells = arrays[i].size // max(1, target.size)
                ratio = np.divide(target, have, out=np.zeros_like(target), where=have > 0)
                fill = np.where(have > 0, 0.0, target / cells)  # a margin cell of zeros gets its target evenly
                arrays[i] = arrays[i] * _spread(ratio, lay.cols[i], keep) + _spread(fill, lay.cols[i], keep)
        if worst <= tolerance * scale:
            return arrays
    raise ArithmeticError(f"non-negative consistency did not converge in {MAX_SWEEPS} sweeps")


def least_squares(tables: list[CountTable]) -> list[np.ndarray]:
    """Step 1 alone: each table's cells (float, in its own cell order) after the weighted least squares."""
    lay = _Layout(tables)
    return lay.flat(_project(lay.arrays(tables), lay))


def nonnegative(tables: list[CountTable]) -> list[np.ndarray]:
    """Steps 1 and 2: consistent, non-negative cells (float, in each table's own cell order), unrounded."""
    lay = _Layout(tables)
    return lay.flat(_nonnegative(lay.arrays(tables), lay))


def _nonnegative_rows(rows: np.ndarray) -> np.ndarray:
    """Each row replaced by the nearest non-negative row with the same sum (0 where the sum is negative)."""
    total = np.maximum(rows.sum(axis=1), 0.0)
    desc = -np.sort(-rows, axis=1)
    excess = np.cumsum(desc, axis=1) - total[:, None]
    j = np.arange(1, rows.shape[1] + 1)
    positive = desc - excess / j > 0  # true for the first k sorted cells, k the number kept above 0
    k = np.maximum(positive.sum(axis=1), 1)
    shift = np.where(positive.any(axis=1), excess[np.arange(len(rows)), k - 1] / k, desc[:, 0])
    return np.maximum(rows - shift[:, None], 0.0)


def _ripple(arrays: list[np.ndarray], lay: _Layout) -> list[np.ndarray]:
    """Every table non-negative, each cell of its finest shared margin keeping its sum (where ≥ 0)."""
    out = []
    shared = [(s, m) for s, m in lay.shared() if len(m) > 1]
    for i, (a, cols) in enumerate(zip(arrays, lay.cols, strict=True)):
        keep = next((s for s, m in shared if i in m), ())
        axes = [cols.index(c) for c in keep]
        moved = np.moveaxis(a, axes, list(range(len(keep))))
        rows = moved.reshape(math.prod(moved.shape[:len(keep)]), -1)
        out.append(np.moveaxis(_nonnegative_rows(rows).reshape(moved.shape), list(range(len(keep))), axes))
    return out


def _nonnegative(arrays: list[np.ndarray], lay: _Layout) -> list[np.ndarray]:
    arrays = _project(arrays, lay)
    for _round in range(NONNEGATIVE_ROUNDS):
        if min(float(a.min(initial=0.0)) for a in arrays) >= -1e-6:
            break
        arrays = _project(_ripple(arrays, lay), lay)
    return _rake([np.maximum(a, 0.0) for a in arrays], lay)


def _largest_remainder(values: np.ndarray, total: int) -> np.ndarray:
    """``values`` (≥ 0) rounded down or up so that they sum to ``total`` (the largest fractions go up)."""
    base = np.floor(values)
    extra = min(max(total - int(base.sum()), 0), values.size)
    up = np.argsort(-(values - base), kind="stable")[:extra]
    base[up] += 1
    return base.astype(np.int64)


def _round(arrays: list[np.ndarray], lay: _Layout) -> list[np.ndarray]:
    """Step 3: the total, each table's finest shared margin, then its cells, by largest remainders."""
    total = round(float(_target(arrays, lay, (), list(range(len(arrays))))))
    rounded: dict[Cols, np.ndarray] = {}
    out = []
    for i, (a, cols) in enumerate(zip(arrays, lay.cols, strict=True)):
        finest = next(((s, m) for s, m in lay.shared() if i in m and len(m) > 1), ((), [i]))
        keep, members = finest
        if keep not in rounded:
            target = _target(arrays, lay, keep, members)
            rounded[keep] = _largest_remainder(target.ravel(), total).reshape(target.shape)
        moved = np.moveaxis(a, [cols.index(c) for c in keep], list(range(len(keep))))
        cells = moved.reshape(max(1, rounded[keep].size), -1)
        whole = np.stack([_largest_remainder(row, int(t)) for row, t in zip(cells, rounded[keep].ravel(),
                                                                             strict=True)])
        out.append(np.moveaxis(whole.reshape(moved.shape), list(range(len(keep))), [cols.index(c) for c in keep]))
    return out


def consistent_view(tables: list[CountTable]) -> list[CountTable]:
    """One release's tables made consistent, non-negative and whole (the module's docstring says what holds).

    A pure function of the published tables; the returned tables have the same cells in the same order,
    and ``ci95`` and ``sd`` NaN: the view is biased where counts are small, so it states no interval."""
    if not tables:
        return []
    lay = _Layout(tables)
    whole = lay.flat(_round(_nonnegative(lay.arrays(tables), lay), lay))
    return [replace(t, counts=tuple(int(c) for c in w), ci95=math.nan, sd=math.nan)
            for t, w in zip(tables, whole, strict=True)]
