"""OpenDP's exact integer mechanisms on count vectors, their 95 % intervals and the ε/ρ conversions.

Noise is drawn by OpenDP (``opendp.measurements.make_gaussian`` / ``make_laplace`` on a vector of
64-bit integers): exact discrete samplers, no floating-point noise, so no precision attack of the kind
that breaks textbook floating-point Laplace. The one currency is ρ of zero-concentrated DP (zCDP):

* ``"gaussian"``: the discrete Gaussian with σ = Δ / √(2ρ) is ρ-zCDP for L2 sensitivity Δ;
* ``"laplace"``: the discrete Laplace with scale b = Δ / ε, ε = √(2ρ), is ε-DP (pure) for L1
  sensitivity Δ, and ε-DP implies ε²/2 = ρ-zCDP.

The conversion from ρ-zCDP to (ε, δ)-DP is OpenDP's own (``make_zCDP_to_approxDP``, the tight bound of
Canonne, Kamath & Steinke 2020, which improves on Bun & Steinke's ρ + 2√(ρ ln 1/δ)):
:func:`epsilon_from_rho` asks OpenDP, :func:`rho_from_epsilon` inverts it by bisection and never
returns a ρ whose ε exceeds the one asked.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from core.dp_spec import DELTA_RANGE as DELTA_RANGE  # the ε/ρ conversions live with the spec's [dp] table
from core.dp_spec import EPSILON_RANGE as EPSILON_RANGE
from core.dp_spec import epsilon_from_rho as epsilon_from_rho
from core.dp_spec import rho_from_epsilon as rho_from_epsilon

Mechanism = Literal["gaussian", "laplace"]
MECHANISMS: tuple[str, ...] = ("gaussian", "laplace")
_SUPPORT_SIGMAS = 40.0  # the pmf beyond 40 σ (or 40 scales) is below 1e-300: nothing left to sum


def scale(rho: float, mechanism: Mechanism = "gaussian", sensitivity: int = 1) -> float:
    """The noise scale that spends exactly ``rho`` (σ of the Gaussian, b of the Laplace)."""
    _check(rho, mechanism, sensitivity)
    # σ = Δ/√(2ρ) and b = Δ/ε with ε = √(2ρ) are the same number; a hair wider so rounding never overspends
    return sensitivity / math.sqrt(2 * rho) * (1 + 1e-12)


def _check(rho: float, mechanism: str, sensitivity: int) -> None:
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS} (got {mechanism!r})")
    if not rho > 0 or not math.isfinite(rho):
        raise ValueError(f"rho must be a positive number (got {rho})")
    if sensitivity < 1:
        raise ValueError(f"sensitivity must be at least 1 (got {sensitivity})")


def _measurement(rho: float, mechanism: Mechanism, sensitivity: int):  # type: ignore[no-untyped-def]
    import opendp.prelude as dp

    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=dp.i64))
    s = scale(rho, mechanism, sensitivity)
    if mechanism == "gaussian":
        meas = dp.m.make_gaussian(domain, dp.l2_distance(T=dp.i64), scale=s)
        spent = float(meas.map(sensitivity))  # ρ
    else:
        meas = dp.m.make_laplace(domain, dp.l1_distance(T=dp.i64), scale=s)
        spent = float(meas.map(sensitivity)) ** 2 / 2  # ε-DP is ε²/2-zCDP
    if spent > rho * (1 + 1e-9):  # OpenDP's own privacy map is the authority
        raise ValueError(f"OpenDP says this {mechanism} mechanism spends rho {spent}, more than {rho}")
    return meas


def noisy_counts(exact: np.ndarray, rho: float, *, mechanism: Mechanism = "gaussian",
                 sensitivity: int = 1) -> np.ndarray:
    """``exact`` (int64 counts) plus OpenDP's discrete noise spending ``rho``; int64, not post-processed.

    ``sensitivity`` is how far one privacy unit can move the vector (L2 for the Gaussian, L1 for the
    Laplace): 1 for one report in one cell, ``max_contributions`` for a person bounded to that many.
    """
    values = np.asarray(exact, dtype=np.int64)
    if values.size == 0:
        return values.copy()
    noisy = _measurement(rho, mechanism, sensitivity)([int(v) for v in values.ravel()])
    return np.asarray(noisy, dtype=np.int64).reshape(values.shape)


def noise_pmf(rho: float, mechanism: Mechanism = "gaussian", sensitivity: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The noise's support (integers) and exact probability mass (for intervals and tests)."""
    s = scale(rho, mechanism, sensitivity)
    half = math.ceil(_SUPPORT_SIGMAS * s) + 10
    x = np.arange(-half, half + 1, dtype=np.int64)
    logp = -(x.astype(float) ** 2) / (2 * s * s) if mechanism == "gaussian" else -np.abs(x).astype(float) / s
    p = np.exp(logp - logp.max())
    return x, p / p.sum()


def noise_moments(rho: float, mechanism: Mechanism = "gaussian", sensitivity: int = 1) -> tuple[float, float, float]:
    """Mean, variance and fourth central moment of one cell's noise (exact sums over the pmf)."""
    x, p = noise_pmf(rho, mechanism, sensitivity)
    mean = float((x * p).sum())
    xc = x - mean
    return mean, float((xc**2 * p).sum()), float((xc**4 * p).sum())


def ci95(rho: float, mechanism: Mechanism = "gaussian", sensitivity: int = 1) -> float:
    """Half-width t of one cell's 95 % interval: the smallest integer with P(|noise| ≤ t) ≥ 0.95.

    ``count ± ci95`` covers the exact count in at least 95 % of cells (the published counts are the
    unbiased noisy integers, negative ones included: :mod:`core.dp.plan`)."""
    x, p = noise_pmf(rho, mechanism, sensitivity)
    centre = len(x) // 2
    within = np.cumsum(p[centre:] + p[centre::-1]) - p[centre]  # P(|Z| <= t) for t = 0, 1, ...
    return float(np.searchsorted(within, 0.95 - 1e-12))
