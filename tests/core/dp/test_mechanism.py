"""The noise is real and correct: OpenDP's draws have the mechanism's exact mean, variance and interval.

Each statistical check is a two-sided z-test at z = 5 (false-alarm rate 5.7e-7 per check, 2.3e-6 for
this file's four moment checks together), on 10^5 draws from OpenDP."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.dp.mechanism import (
    Mechanism,
    ci95,
    epsilon_from_rho,
    noise_moments,
    noise_pmf,
    noisy_counts,
    rho_from_epsilon,
    scale,
)

N = 100_000
Z = 5.0


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_empirical_mean_and_variance_match_the_mechanism(mechanism: Mechanism) -> None:
    rho = 0.05
    noise = noisy_counts(np.zeros(N, dtype=np.int64), rho, mechanism=mechanism).astype(float)
    mean, var, mu4 = noise_moments(rho, mechanism)
    assert abs(noise.mean() - mean) <= Z * math.sqrt(var / N)
    assert abs(noise.var() - var) <= Z * math.sqrt((mu4 - var * var) / N)
    assert len(np.unique(noise)) > 10  # real noise, not a constant


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_the_95_interval_covers_95_percent(mechanism: Mechanism) -> None:
    rho = 0.2
    noise = noisy_counts(np.full(N, 50, dtype=np.int64), rho, mechanism=mechanism) - 50
    half = ci95(rho, mechanism)
    x, p = noise_pmf(rho, mechanism)
    exact = float(p[np.abs(x) <= half].sum())
    assert 0.95 <= exact < float(p[np.abs(x) <= half + 1].sum())  # the smallest such width
    assert float(p[np.abs(x) <= half - 1].sum()) < 0.95
    share = float((np.abs(noise) <= half).mean())
    assert abs(share - exact) <= Z * math.sqrt(exact * (1 - exact) / N)


def test_the_variance_follows_rho_and_sensitivity() -> None:
    _, v1, _ = noise_moments(0.02, "gaussian")
    _, v2, _ = noise_moments(0.02, "gaussian", sensitivity=3)
    assert v1 == pytest.approx(1 / (2 * 0.02), rel=1e-6)  # σ² = Δ²/(2ρ) for σ well above 1
    assert v2 == pytest.approx(9 * v1, rel=1e-6)
    assert scale(0.5, "laplace") == pytest.approx(1.0)
    assert ci95(0.001, "gaussian") > ci95(0.1, "gaussian") > ci95(10.0, "gaussian")


def test_rho_and_epsilon_convert_both_ways_by_opendps_own_conversion() -> None:
    import math

    import opendp.prelude as dp

    dp.enable_features("contrib")
    for eps, delta in [(0.5, 1e-6), (1.0, 1e-6), (10.0, 1e-9)]:
        rho = rho_from_epsilon(eps, delta)
        assert epsilon_from_rho(rho, delta) <= eps  # never a rho that spends more than asked
        assert epsilon_from_rho(rho, delta) == pytest.approx(eps, rel=1e-8)
        meas = dp.m.make_gaussian(dp.atom_domain(T=dp.i64), dp.absolute_distance(T=dp.i64),
                                  scale=1 / math.sqrt(2 * rho))
        assert dp.c.make_zCDP_to_approxDP(meas).map(1).epsilon(delta) == pytest.approx(eps, rel=1e-8)  # OpenDP's map
        assert eps <= rho + 2 * math.sqrt(rho * math.log(1 / delta))  # tighter than Bun & Steinke's bound
    with pytest.raises(ValueError):
        rho_from_epsilon(-1, 1e-6)
    with pytest.raises(ValueError, match="epsilon between"):
        rho_from_epsilon(1e-12, 1e-6)  # refused before any allocation (it used to end in a MemoryError)
    with pytest.raises(ValueError, match="delta must be between"):
        epsilon_from_rho(0.1, 1e-320)
    with pytest.raises(ValueError, match="mechanism"):
        # a mechanism outside the Literal on purpose: the run-time check is what is tested
        noisy_counts(np.zeros(3, dtype=np.int64), 1.0, mechanism="uniform")  # type: ignore[arg-type]
