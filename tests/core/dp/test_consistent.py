"""The consistent view: least squares checked against numpy's solver, then non-negative, then whole.

Pure post-processing, so the noisy tables here are made with a seeded numpy generator (the view never
sees how a table was drawn)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from core.dp.consistent import consistent_view, least_squares, nonnegative
from core.dp.tables import CountTable

DOMAINS = {"offence": ["Theft", "Fraud", "Arson"], "region": ["North", "South"], "week": ["W1", "W2"],
           "age_band": ["[0, 9]", "[10, 19]", "[20, 29]"], "sex": ["F", "M"]}
GROUPINGS = [("offence",), ("region", "offence"), ("age_band", "sex", "offence"), ("week", "region"),
             ("age_band", "sex")]


def _table(by: tuple[str, ...], counts: np.ndarray, sd: float, domains: dict | None = None) -> CountTable:
    doms = domains or DOMAINS
    groups = tuple(itertools.product(*(doms[c] for c in by)))
    return CountTable(by=by, groups=groups, counts=tuple(int(c) for c in counts), ci95=round(1.96 * sd),
                      mechanism="gaussian", rho=1 / (2 * sd * sd), unit="report", sd=sd)


def _release(seed: int, sds: list[float], n: int = 15) -> list[CountTable]:
    """Exact counts of ``n`` random reports plus rounded Gaussian noise of each table's sd."""
    rng = np.random.default_rng(seed)
    rows = pd.DataFrame({c: rng.choice(v, n) for c, v in DOMAINS.items()})
    tables = []
    for by, sd in zip(GROUPINGS, sds, strict=True):
        cells = itertools.product(*(DOMAINS[c] for c in by))
        exact = np.array([((rows[list(by)] == g).all(axis=1)).sum() for g in cells])
        tables.append(_table(by, exact + np.rint(rng.normal(0, sd, exact.size)), sd))
    return tables


def _margin(table: CountTable, values: np.ndarray, keep: tuple[str, ...]) -> pd.Series:
    """A table's margin on ``keep``, computed from the cells' labels (not their positions)."""
    frame = pd.DataFrame(list(table.groups), columns=list(table.by))
    frame["v"] = np.asarray(values, dtype=float)
    if not keep:
        return pd.Series([frame["v"].sum()])
    return frame.groupby(list(keep))["v"].sum().sort_index()


def _shared(tables: list[CountTable]) -> list[tuple[tuple[str, ...], int, int]]:
    """Every pair of tables and the columns they share (sorted), the empty set included."""
    return [(tuple(sorted(set(a.by) & set(b.by))), i, j)
            for (i, a), (j, b) in itertools.combinations(enumerate(tables), 2)]


def _lstsq(tables: list[CountTable]) -> list[np.ndarray]:
    """The weighted least squares under "every pair of tables agrees on its shared margin", by numpy.

    Minimise Σ (x - y)² / sd² subject to C x = 0, through its KKT system [W Cᵀ; C 0] [x; λ] = [W y; 0]
    (C has redundant rows, so the system is singular: lstsq's minimum-norm solution has the unique x)."""
    sizes = [len(t.counts) for t in tables]
    offsets = np.cumsum([0, *sizes])
    rows = []
    for keep, i, j in _shared(tables):
        for t, k, sign in ((tables[i], i, 1.0), (tables[j], j, -1.0)):
            frame = pd.DataFrame(list(t.groups), columns=list(t.by))
            labels = frame[list(keep)].astype(str).agg("|".join, axis=1) if keep else pd.Series([""] * len(frame))
            if sign > 0:
                cells = sorted(set(labels))
                block = np.zeros((len(cells), offsets[-1]))
            for r, cell in enumerate(cells):
                block[r, offsets[k]:offsets[k + 1]] += sign * (labels == cell).to_numpy()
        rows.append(block)
    c = np.vstack(rows)
    w = np.concatenate([np.full(n, 1 / t.sd**2) for n, t in zip(sizes, tables, strict=True)])
    y = np.concatenate([np.asarray(t.counts, dtype=float) for t in tables])
    kkt = np.block([[np.diag(w), c.T], [c, np.zeros((len(c), len(c)))]])
    solution = np.linalg.lstsq(kkt, np.concatenate([w * y, np.zeros(len(c))]), rcond=None)[0][:offsets[-1]]
    return [solution[offsets[k]:offsets[k + 1]] for k in range(len(tables))]


def test_least_squares_is_numpys_weighted_solution() -> None:
    tables = _release(1, [3.0, 5.0, 2.0, 4.0, 6.0])
    # one table with its columns and a domain in another order: the view matches cells by label
    doms = {**DOMAINS, "offence": ["Arson", "Theft", "Fraud"]}
    swapped = tables[1]
    frame = pd.DataFrame(list(swapped.groups), columns=list(swapped.by)).assign(v=swapped.counts)
    order = frame.set_index(["offence", "region"])["v"]
    tables[1] = _table(("offence", "region"), np.array([order[g] for g in itertools.product(doms["offence"],
                                                                                              doms["region"])]),
                       swapped.sd, doms)
    ours, theirs = least_squares(tables), _lstsq(tables)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-7)


@pytest.mark.parametrize("seed", range(6))
def test_the_view_agrees_on_shared_margins_is_non_negative_and_whole(seed: int) -> None:
    tables = _release(seed, [4.0, 4.0, 4.0, 6.0, 3.0], n=10)
    exact_before = nonnegative(tables)
    assert min(v.min() for v in exact_before) >= 0.0
    for keep, i, j in _shared(tables):  # before rounding: equal (to floating point)
        a, b = _margin(tables[i], exact_before[i], keep), _margin(tables[j], exact_before[j], keep)
        np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), atol=1e-6)
    view = consistent_view(tables)
    assert [t.groups for t in view] == [t.groups for t in tables] and all(np.isnan(t.ci95) for t in view)
    assert min(min(t.counts) for t in view) >= 0
    assert len({sum(t.counts) for t in view}) == 1  # one total, exactly
    for keep, i, j in _shared(tables):  # after rounding: within the rounding (each cell moved by less than 1)
        a, b = _margin(view[i], np.array(view[i].counts), keep), _margin(view[j], np.array(view[j].counts), keep)
        common = _margin(tables[i], exact_before[i], keep).to_numpy()
        for t, m in ((view[i], a), (view[j], b)):
            per_cell = len(t.counts) // max(1, len(m))
            assert (np.abs(m.to_numpy() - common) < per_cell + 1e-6).all()
    # tables whose finest shared columns are the same agree on them exactly
    for keep, i, j in ((("offence",), 0, 1), (("age_band", "sex"), 2, 4)):
        assert _margin(view[i], np.array(view[i].counts), keep).equals(_margin(view[j], np.array(view[j].counts),
                                                                                 keep))


def test_a_consistent_release_is_left_alone_and_bad_input_is_refused() -> None:
    offence = _table(("offence",), np.array([5, 2, 0]), 3.0)
    region = _table(("region", "offence"), np.array([4, 1, 0, 1, 1, 0]), 3.0)
    assert [t.counts for t in consistent_view([offence, region])] == [offence.counts, region.counts]
    assert consistent_view([]) == []
    other = _table(("offence",), np.array([1, 1]), 3.0, {"offence": ["Theft", "Fraud"]})
    with pytest.raises(ValueError, match="domain of offence"):
        consistent_view([other, region])
