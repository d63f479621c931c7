"""The published counts are unbiased: 10³ independent draws of one release's tables, checked by z-tests.

The exact counts come from a fixed numpy seed; the noise is OpenDP's, which cannot be seeded, so each
assertion is a two-sided z-test at |z| < 4.5 on a mean over the 10³ draws, whose standard error is
known from the table's stated ``sd``: under an unbiased mechanism each assertion fails by chance with
probability 2 × (1 − Φ(4.5)) ≈ 7e-6 (about 1e-4 for the whole file's assertions together). Clamping
negatives at 0, the bias this guards against, moves every empty cell's mean by about 0.4 σ and the
totals below by tens of standard errors.

To keep the run to a few seconds, the 10³ draws are one call of ``count_tables``: every row is
replicated once per draw with a ``draw`` column, and each grouping gets ``draw`` in front, so each table
holds 10³ independent copies of the release's table (the noise of every cell is drawn independently).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from core.dp.mechanism import Mechanism, noise_moments
from core.dp.plan import count_tables, exact_counts
from core.dp.tables import CountTable

DRAWS = 1000
Z_MAX = 4.5
DOMAINS = {"offence": ["Theft", "Fraud", "Arson"], "region": ["North", "South"], "week": ["W1", "W2"],
           "age_band": ["[0, 9]", "[10, 19]", "[20, 29]"], "sex": ["F", "M"]}
GROUPINGS = [("offence",), ("region", "offence"), ("age_band", "sex", "offence"), ("week", "region"),
             ("age_band", "sex")]


def _rows() -> pd.DataFrame:
    """Twelve reports, skewed so that most cells of the finer tables are empty (where clamping biased most)."""
    rng = np.random.default_rng(2024)
    n = 12
    return pd.DataFrame({"offence": rng.choice(DOMAINS["offence"], n, p=[0.7, 0.25, 0.05]),
                         "region": rng.choice(DOMAINS["region"], n, p=[0.8, 0.2]),
                         "week": rng.choice(DOMAINS["week"], n),
                         "age_band": rng.choice(DOMAINS["age_band"], n, p=[0.1, 0.2, 0.7]),
                         "sex": rng.choice(DOMAINS["sex"], n)})


@pytest.fixture(scope="module", params=["gaussian", "laplace"])
def draws(request: pytest.FixtureRequest) -> tuple[Mechanism, pd.DataFrame, list[CountTable]]:
    rows = _rows()
    replicated = pd.concat([rows] * DRAWS, ignore_index=True)
    replicated["draw"] = np.repeat([f"{d:04d}" for d in range(DRAWS)], len(rows))
    domains = {**DOMAINS, "draw": [f"{d:04d}" for d in range(DRAWS)]}
    tables = count_tables(replicated, [("draw", *g) for g in GROUPINGS], domains, 0.05, mechanism=request.param)
    return request.param, rows, tables


def _errors(rows: pd.DataFrame, table: CountTable, by: tuple[str, ...]) -> np.ndarray:
    """Published minus exact, one row per draw, the cells in the grouping's domain order."""
    _, exact = exact_counts(rows, by, DOMAINS)
    noisy = np.asarray(table.counts, dtype=float).reshape(DRAWS, -1)
    return noisy - exact


def test_every_table_total_and_shared_margin_is_unbiased(
        draws: tuple[Mechanism, pd.DataFrame, list[CountTable]]) -> None:
    mechanism, rows, tables = draws
    for by, table in zip(GROUPINGS, tables, strict=True):
        errors = _errors(rows, table, by)
        cells = errors.shape[1]
        total = errors.sum(axis=1)  # each draw's error of the table's total
        z = total.mean() / (table.sd * math.sqrt(cells) / math.sqrt(DRAWS))
        assert abs(z) < Z_MAX, f"{mechanism} {by}: mean error of the total {total.mean():.2f}, z = {z:.1f}"
        if "offence" in by and len(by) > 1:  # the offence margin, shared with the offence table
            shape = [len(DOMAINS[c]) for c in by]
            margin = errors.reshape(DRAWS, *shape).sum(axis=tuple(1 + k for k, c in enumerate(by) if c != "offence"))
            per = cells // len(DOMAINS["offence"])
            zs = margin.mean(axis=0) / (table.sd * math.sqrt(per) / math.sqrt(DRAWS))
            assert np.abs(zs).max() < Z_MAX, f"{mechanism} {by}: offence margin z = {zs}"
    assert min(min(t.counts) for t in tables) < 0  # negative counts are published as drawn


def test_the_stated_sd_is_the_noise_sd(draws: tuple[Mechanism, pd.DataFrame, list[CountTable]]) -> None:
    """The sample variance of the cells' errors against ``sd²``, its standard error from the fourth moment."""
    mechanism, rows, tables = draws
    _, var, fourth = noise_moments(tables[0].rho, mechanism)
    for by, table in zip(GROUPINGS, tables, strict=True):
        assert table.sd == pytest.approx(math.sqrt(var), rel=1e-12)
        errors = _errors(rows, table, by).ravel()
        z = (np.mean(errors**2) - var) / math.sqrt((fourth - var**2) / errors.size)
        assert abs(z) < Z_MAX, f"{mechanism} {by}: noise variance {np.mean(errors ** 2):.2f} vs {var:.2f}"
