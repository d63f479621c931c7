"""Population uniqueness: the share of the population that is unique on the quasi-identifiers,
estimated from a sample's class-size histogram (docs/risk.md).

Inputs everywhere: ``sizes`` (distinct sample class sizes j), ``counts`` (number of classes c_j of
each size), the sample size n and the sampling fraction pi = n / N. Every estimator returns the
estimated *number* of population uniques, or ``nan`` when it is not defined for the data (no
convergence, outside [0, N]); :func:`uniqueness` turns them into shares of N.

- Zayatz 1991, as implemented in ARX's ``ModelZayatz``;
- Pitman's sampling formula, maximum likelihood as in Hoshino 2001 and ARX's ``ModelPitman``;
- SNB, the shifted negative binomial model of Chen and Keller-McNulty 1998 (ARX's ``ModelSNB``),
  with Shlosser's estimate of the number of non-empty population classes;
- Dankar et al. 2012's decision rule between them.

When pi = 1 the sample is the population and every estimate equals the sample uniques.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

Model = str  # "pitman" | "zayatz" | "snb"


def _valid(value: float, population: float) -> float:
    return float(value) if np.isfinite(value) and 0.0 <= value <= population + 1e-6 else math.nan


def hypergeom_one(population: int, sizes: np.ndarray, n: int) -> np.ndarray:
    """h(1; N, j, n): probability that a sample of n out of N holds exactly one record of a class of j,
    j C(N - j, n - 1) / C(N, n) = j (n / N) prod_{i=1}^{j-1} (N - n - i + 1) / (N - i), summed in logs."""
    j = np.asarray(sizes, dtype=np.int64)
    big, m = float(population), float(n)
    i = np.arange(1, max(int(j.max(initial=1)), 1), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(big - m - i + 1.0 > 0, np.log1p(-(m - 1.0) / (big - i)), -np.inf)
    cum = np.concatenate([[0.0], np.cumsum(terms)])
    return j * (m / big) * np.exp(cum[j - 1])


def zayatz(sizes: np.ndarray, counts: np.ndarray, n: int, population: int) -> float:
    """Zayatz: c1 * P(unique in population | unique in sample) / pi, with the conditional probability

    P = c1 h(1; N, 1, n) / sum_j c_j h(1; N, j, n), h(1; N, j, n) the hypergeometric probability of
    drawing exactly one of a class of j population records in a sample of n out of N.
    """
    c1 = float(counts[sizes == 1].sum())
    if c1 == 0:
        return 0.0
    h = hypergeom_one(population, sizes, n)
    denom = float((counts * h).sum())
    if denom <= 0:
        return math.nan
    cond = c1 * float(hypergeom_one(population, np.ones(1), n)[0]) / denom
    return _valid(c1 * cond / (n / population), population)


def _pitman_gradient(x: np.ndarray, sizes: np.ndarray, counts: np.ndarray, u: float, n: float) -> np.ndarray:
    """Score of the Pitman log-likelihood in (theta, alpha) (Hoshino 2001; ARX's closed form)."""
    from scipy import special  # scipy loads only when a population is estimated (not for pi = 1)

    t, a = float(x[0]), float(x[1])
    o1 = (special.digamma(t / a + u) - special.digamma(t / a + 1.0)) / a  # sum_{i<u} 1 / (t + i a)
    o2 = special.digamma(n + t) - special.digamma(t + 1.0)  # sum_{i<n} 1 / (t + i)
    o3 = ((u - 1.0) - t * o1) / a  # sum_{i<u} i / (t + i a)
    big = sizes > 1
    o4 = float((counts[big] * (special.digamma(sizes[big] - a) - special.digamma(1.0 - a))).sum())
    return np.array([o1 - o2, o3 - o4])


def pitman(sizes: np.ndarray, counts: np.ndarray, n: int, population: int) -> float:
    """Pitman: solve the likelihood equations for (theta, alpha), then N^alpha Gamma(theta+1) / Gamma(theta+alpha).

    Tries ARX's moment-based starting point, then two fixed ones; ``nan`` when none converges."""
    from scipy import optimize, special

    c1 = float(counts[sizes == 1].sum())
    if c1 == 0:
        return 0.0
    c2 = float(counts[sizes == 2].sum()) or 1.0
    u = float(counts.sum())
    c = c1 * (c1 - 1.0) / c2
    den = 2.0 * c1 * u + c1 * c - n * c
    t0 = (n * u * c - c1 * (n - 1.0) * (2.0 * u + c)) / den if den else math.nan
    a0 = (t0 * (c1 - n) + (n - 1.0) * c1) / (n * u) if np.isfinite(t0) else math.nan
    starts = [(t0, a0)] if np.isfinite(t0) and np.isfinite(a0) and a0 < 1 and t0 + a0 > 0 else []
    starts += [(1.0, 0.5), (u / 2.0, 0.1)]
    s, cnt = sizes.astype(np.float64), counts.astype(np.float64)
    for start in starts:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sol = optimize.root(_pitman_gradient, np.asarray(start, float), args=(s, cnt, u, float(n)), method="hybr")
        t, a = sol.x
        # 0 <= alpha < 1 is Pitman's infinite-class case; alpha < 0 (a finite number of classes, as for
        # a few categorical QIs) is accepted as ARX does: population uniques then vanish as N grows.
        if not sol.success or not a < 1.0 or a == 0.0 or t + a <= 0.0:
            continue
        with np.errstate(all="ignore"):
            value = float(np.exp(special.gammaln(t + 1.0) - special.gammaln(t + a) + a * math.log(population)))
        if np.isfinite(_valid(value, population)):
            return value
    return math.nan


def shlosser(sizes: np.ndarray, counts: np.ndarray, pi: float) -> float:
    """Shlosser's estimate of the number of non-empty population classes (Haas et al. 1995):
    u + c1 * sum_j (1-pi)^j c_j / sum_j j pi (1-pi)^(j-1) c_j."""
    u = float(counts.sum())
    c1 = float(counts[sizes == 1].sum())
    q = 1.0 - pi
    num = float((q ** sizes * counts).sum())
    den = float((sizes * pi * q ** (sizes - 1) * counts).sum())
    return u + c1 * num / den if den > 0 else u


def _snb_moments(x: np.ndarray, k: float, pi: float) -> tuple[float, float]:
    """Expected number of sample classes of size 1 and 2 under SNB(alpha, beta) with K classes."""
    a, b = float(x[0]), float(x[1])
    d = (1.0 - pi) * (1.0 - b)
    e1 = k * pi * (b / (1.0 - d)) ** a * (1.0 + a * d / (1.0 - d))
    e2 = k * pi * pi * a * b ** a * (1.0 - b) * (2.0 - (1.0 - a) * d) / (2.0 * (1.0 - d) ** (a + 2.0))
    return e1, e2


def snb(sizes: np.ndarray, counts: np.ndarray, n: int, population: int) -> float:
    """SNB: fit (alpha, beta) so the expected sample classes of size 1 and 2 equal c1 and c2; K beta^alpha."""
    from scipy import optimize

    c1 = float(counts[sizes == 1].sum())
    if c1 == 0:
        return 0.0
    c2 = float(counts[sizes == 2].sum())
    pi = n / population
    k = shlosser(sizes.astype(np.float64), counts.astype(np.float64), pi)

    def residual(x: np.ndarray) -> np.ndarray:
        e1, e2 = _snb_moments(x, k, pi)
        return np.array([(e1 - c1) / c1, (e2 - c2) / max(c2, 1.0)])

    for start in ((1.0, 0.5), (0.1, 0.9), (5.0, 0.1)):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sol = optimize.least_squares(residual, np.asarray(start), bounds=([1e-9, 1e-12], [1e6, 1.0 - 1e-12]))
        if sol.success and np.abs(sol.fun).max() < 1e-6:
            a, b = sol.x
            return _valid(k * b ** a, population)
    return math.nan


def dankar(pi: float, estimates: dict[Model, float]) -> tuple[float, Model | None]:
    """Dankar et al. 2012's rule: Pitman when pi <= 0.1 (Zayatz if Pitman fails), else the smaller of
    Zayatz and SNB (Zayatz if SNB fails). Returns the estimate and the model chosen."""
    z, p, s = estimates["zayatz"], estimates["pitman"], estimates["snb"]
    if pi <= 0.1:
        return (p, "pitman") if np.isfinite(p) and p != 0 else (z, "zayatz")
    if np.isfinite(s) and s != 0:
        return (z, "zayatz") if z < s else (s, "snb")
    return z, "zayatz"


def uniqueness(class_sizes: np.ndarray, population: int) -> dict[str, float | str | None]:
    """Population uniqueness (share of the N population records that are unique) by every model."""
    class_sizes = np.asarray(class_sizes, dtype=np.int64)
    n = int(class_sizes.sum())
    if n == 0:
        return {"pitman": 0.0, "zayatz": 0.0, "snb": 0.0, "dankar": 0.0, "dankar_model": None}
    sizes, counts = np.unique(class_sizes, return_counts=True)
    population = max(int(population), n)
    if population == n:  # the sample is the population: uniques are known, not estimated
        share = float(counts[sizes == 1].sum()) / n
        return {"pitman": share, "zayatz": share, "snb": share, "dankar": share, "dankar_model": "sample"}
    est = {"pitman": pitman(sizes, counts, n, population), "zayatz": zayatz(sizes, counts, n, population),
           "snb": snb(sizes, counts, n, population)}
    value, model = dankar(n / population, est)
    out: dict[str, float | str | None] = {name: (v / population if np.isfinite(v) else None) for name, v in est.items()}
    out["dankar"] = value / population if np.isfinite(value) else None
    out["dankar_model"] = model if np.isfinite(value) else None
    return out
