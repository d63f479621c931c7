"""Count tables of a set of rows: the budget split over the groupings, noise drawn, published unbiased.

The pipeline, in order (a transformation of the rows that keeps a unit's influence bounded, the
counts, the noise):

1. **Contribution bound** (``unit = "person"`` only): each person keeps at most ``max_contributions``
   rows per block (their first, in the input's order); one person then moves each table by at most
   ``max_contributions`` (the sensitivity). With ``unit = "report"`` one report moves one cell by one.
2. **Exact counts** over the full public domain (the product of the grouping's column domains), zero
   cells included; rows outside the domain count nowhere.
3. **Noise**: every table gets ``rho_total / len(groupings)`` (zCDP composes by adding ρ) and OpenDP's
   discrete Gaussian (or Laplace) noise calibrated to it (:mod:`core.dp.mechanism`).
4. **No post-processing**: the noisy integers are published as drawn, negative ones included, so every
   cell and every sum of cells is an unbiased estimate of its exact count (clamping negatives at 0 would
   push every near-empty cell up by about 0.4 σ, and sums of many such cells far up). Each table states
   its cells' noise sd, so a sum of m cells has a known error (:meth:`CountTable.sum_ci95`). Tables are
   independent draws: a table's cells do not add up exactly to a coarser table's cell. A non-negative
   view whose shared margins agree is post-processing an analyst may ask for
   (:func:`core.dp.consistent.consistent_view`), never what is published.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from core.dp.mechanism import Mechanism, ci95, noisy_counts
from core.dp.tables import CountTable, noise_sd
from core.errors import SpecError

MAX_CELLS = 1_000_000  # a grouping whose domain product is larger is refused (the table would be mostly noise)


def bound_contributions(frame: pd.DataFrame, person: pd.Series, blocks: pd.Series | None,
                        max_contributions: int) -> pd.DataFrame:
    """Keep each person's first ``max_contributions`` rows per block (per whole frame without blocks)."""
    keys = [person] if blocks is None else [person, blocks]
    rank = frame.groupby(keys, sort=False, dropna=False).cumcount()
    return frame[rank.to_numpy() < max_contributions]


def exact_counts(frame: pd.DataFrame, by: tuple[str, ...],
                 domains: dict[str, list[str]]) -> tuple[list[tuple[str, ...]], np.ndarray]:
    """Every cell of the grouping's public domain (in domain order) and its exact count (int64)."""
    missing = [c for c in by if c not in domains]
    if missing:
        raise SpecError(f"grouping {' x '.join(by)}: no public domain for {', '.join(missing)}")
    size = int(np.prod([len(domains[c]) for c in by], dtype=np.int64))
    if size > MAX_CELLS:
        raise SpecError(f"grouping {' x '.join(by)} has {size:,} cells (more than {MAX_CELLS:,}); use coarser columns")
    counts = np.zeros(size, dtype=np.int64)
    index = np.zeros(len(frame), dtype=np.int64)
    inside = np.ones(len(frame), dtype=bool)
    for col in by:
        codes = pd.Categorical(frame[col], categories=domains[col]).codes.astype(np.int64)
        inside &= codes >= 0
        index = index * len(domains[col]) + codes
    np.add.at(counts, index[inside], 1)
    cells = [tuple(cell) for cell in itertools.product(*(domains[c] for c in by))]
    return cells, counts


def count_tables(frame: pd.DataFrame, groupings: list[tuple[str, ...]], domains: dict[str, list[str]],
                 rho_total: float, *, unit: str = "report", person_column: str | None = None,
                 block_column: str | None = None, max_contributions: int = 1,
                 mechanism: Mechanism = "gaussian") -> list[CountTable]:
    """Noisy count tables of ``frame`` for each grouping, spending ``rho_total`` in all (zCDP).

    ``frame`` holds the grouping columns (see :func:`core.dp.derive.grouping_columns`); with
    ``unit = "person"`` also ``person_column`` and, for a per-block bound, ``block_column``.
    """
    if not groupings:
        raise SpecError("no groupings to count")
    if unit not in ("report", "person"):
        raise SpecError(f"unit must be 'report' or 'person' (got {unit!r})")
    sensitivity = 1
    if unit == "person":
        if person_column is None or person_column not in frame.columns:
            raise SpecError("unit 'person' needs the person column")
        blocks = frame[block_column] if block_column is not None else None
        frame = bound_contributions(frame, frame[person_column], blocks, max_contributions)
        sensitivity = max_contributions
    rho = rho_total / len(groupings)
    half_width = ci95(rho, mechanism, sensitivity)
    sd = noise_sd(rho, mechanism, sensitivity)
    tables = []
    for by in groupings:
        cells, exact = exact_counts(frame, tuple(by), domains)
        noisy = noisy_counts(exact, rho, mechanism=mechanism, sensitivity=sensitivity)  # unbiased: never clamped
        tables.append(CountTable(by=tuple(by), groups=tuple(cells), counts=tuple(int(c) for c in noisy),
                                 ci95=half_width, mechanism=mechanism, rho=rho, unit=unit,
                                 max_contributions=max_contributions if unit == "person" else 1, sd=sd))
    return tables
