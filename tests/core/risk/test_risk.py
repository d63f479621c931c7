"""Risk formulas on small tables with answers worked out by hand, and against pycanon."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from pycanon import anonymity
from scipy import special, stats

from core.risk import risk_profile
from core.risk.attribute import attribute_disclosure
from core.risk.classes import class_index, qi_analysis
from core.risk.population import _pitman_gradient, _snb_moments, hypergeom_one, shlosser, uniqueness, zayatz
from core.risk.reidentification import journalist, marketer, prosecutor, risk_histogram, sample_uniques

# Three classes of sizes 1, 2 and 3 (n = 6).
TABLE = pd.DataFrame({
    "sex": ["F", "M", "M", "F", "F", "F"],
    "age": ["20-29", "30-39", "30-39", "40-49", "40-49", "40-49"],
    "offence": ["Theft", "Fraud", "Fraud", "Theft", "Fraud", "Murder"],
})
SIZES = np.array([1, 2, 3])


def test_class_index_groups_rows_by_qi_values() -> None:
    cls, sizes = class_index(TABLE, ["sex", "age"])
    assert cls.tolist() == [0, 1, 1, 2, 2, 2]
    assert sizes.tolist() == [1, 2, 3]
    assert class_index(TABLE, [])[1].tolist() == [6]


def test_prosecutor_by_hand() -> None:
    # risk per record 1/f: 1, 1/2, 1/2, 1/3, 1/3, 1/3
    assert prosecutor(SIZES, 0.2) == pytest.approx({"highest": 1.0, "average": 3 / 6, "records_at_risk": 1.0})
    assert prosecutor(SIZES, 0.4)["records_at_risk"] == pytest.approx(3 / 6)  # only 1 and 1/2 exceed 0.4
    assert sample_uniques(SIZES) == pytest.approx(1 / 6)


def test_journalist_and_marketer_by_hand() -> None:
    pop = np.array([2, 4, 6])  # population class sizes, e.g. a sampling fraction of 1/2
    j = journalist(SIZES, pop, 0.2)
    assert j["highest"] == pytest.approx(1 / 2)
    # max(J / sum F, (1/n) sum f/F) = max(3/12, (1/2 + 2/4 + 3/6) / 6) = 0.25
    assert j["average"] == pytest.approx(0.25)
    assert j["records_at_risk"] == pytest.approx(3 / 6)  # 1/F = .5, .25 exceed 0.2; 1/6 does not
    assert marketer(SIZES, pop) == pytest.approx(0.25)
    assert marketer(SIZES, SIZES) == pytest.approx(3 / 6)  # the sample is the population: J / n


def test_histogram_counts_records_by_risk() -> None:
    hist = {(b["low"], b["high"]): b["records"] for b in risk_histogram(SIZES)}
    assert hist[(0.5, 1.0)] == 1  # risk 1
    assert hist[(1 / 3, 0.5)] == 2  # risk 1/2 (right-closed)
    assert hist[(0.2, 1 / 3)] == 3  # risk 1/3
    assert sum(hist.values()) == 6


def test_zayatz_by_hand() -> None:
    # N = 12, n = 6: h(1; 12, j, 6) = j C(12-j, 5) / C(12, 6) = 0.5, 6/11, 9/22 for j = 1, 2, 3
    h = [0.5, 6 / 11, 9 / 22]
    cond = 0.5 / sum(h)
    assert zayatz(SIZES, np.ones(3, int), 6, 12) == pytest.approx(1 * cond / 0.5)


def test_shlosser_by_hand() -> None:
    # pi = 1/2: 3 + 1 * (.5 + .25 + .125) / (1*.5 + 2*.5*.5 + 3*.5*.25)
    assert shlosser(SIZES.astype(float), np.ones(3), 0.5) == pytest.approx(3 + 0.875 / 1.375)


def test_pitman_score_matches_the_sums() -> None:
    """The closed form (digamma) equals the likelihood's score written as plain sums (Hoshino 2001)."""
    sizes, counts = np.array([1.0, 2.0, 5.0]), np.array([7.0, 3.0, 2.0])
    u, n = counts.sum(), float((sizes * counts).sum())
    t, a = 3.7, 0.4
    i = np.arange(1, int(u))
    o1 = (1 / (t + i * a)).sum() - (1 / (t + np.arange(1, int(n)))).sum()
    o2 = (i / (t + i * a)).sum() - sum(c * (1 / (np.arange(1, int(j)) - a)).sum() for j, c in zip(sizes, counts))
    assert _pitman_gradient(np.array([t, a]), sizes, counts, u, n) == pytest.approx([o1, o2])


def test_snb_moments_match_the_series() -> None:
    """E[c1], E[c2] under SNB: sum over population class sizes F of P(F) * Binomial(F, pi) at 1 and 2."""
    a, b, k, pi = 1.7, 0.3, 1000.0, 0.2
    big = np.arange(1, 3000, dtype=float)
    log_pf = special.gammaln(big + a - 1) - special.gammaln(big) - special.gammaln(a) + a * np.log(b) \
        + (big - 1) * np.log1p(-b)
    pf = np.exp(log_pf)
    e1 = k * (pf * big * pi * (1 - pi) ** (big - 1)).sum()
    e2 = k * (pf * big * (big - 1) / 2 * pi**2 * (1 - pi) ** (big - 2)).sum()
    assert _snb_moments(np.array([a, b]), k, pi) == pytest.approx((e1, e2), rel=1e-9)


def test_estimators_near_the_truth_on_a_known_population() -> None:
    rng = np.random.default_rng(3)
    pop = rng.zipf(1.6, 100_000)
    sample = rng.choice(pop, 10_000, replace=False)
    truth = (np.unique(pop, return_counts=True)[1] == 1).sum() / len(pop)
    est = uniqueness(np.unique(sample, return_counts=True)[1], len(pop))
    for model in ("pitman", "zayatz", "snb", "dankar"):
        assert est[model] is not None and abs(est[model] - truth) < 0.5 * truth, (model, est[model], truth)
    assert est["dankar_model"] == "pitman"  # pi = 0.1


def test_attribute_disclosure_by_hand() -> None:
    cls, sizes = class_index(TABLE, ["sex", "age"])
    sev = TABLE["offence"].map({"Theft": 5, "Fraud": 5, "Murder": 25}).to_numpy(float)
    out = attribute_disclosure(cls, sizes, TABLE["offence"].to_numpy(), sev, severe_at=5)
    assert out["homogeneous_classes"] == 2 and out["homogeneous_records"] == 3  # {Theft}, {Fraud, Fraud}
    assert out["max_sensitive_share"] == 1.0
    # every record is severe at 5; Theft (class of 1 < 5), Fraud x2 (2 < 5), all three of the last class
    assert out["severe_records"] == 6 and out["severe_in_homogeneous"] == 3 and out["severe_in_small"] == 6


def test_against_pycanon() -> None:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.integers(0, 4, 300).astype(str), "b": rng.integers(0, 3, 300).astype(str),
                       "s": rng.choice(["x", "y", "z"], 300, p=[0.6, 0.3, 0.1])})
    prof = risk_profile(df, ["a", "b"], sensitive="s")
    assert prof.prosecutor.highest == pytest.approx(1 / anonymity.k_anonymity(df, ["a", "b"]))
    assert prof.attribute is not None
    assert prof.attribute.delta_disclosure == pytest.approx(anonymity.delta_disclosure(df, ["a", "b"], ["s"]))
    homogeneous = anonymity.l_diversity(df, ["a", "b"], ["s"]) == 1
    assert (prof.attribute.homogeneous_classes > 0) == homogeneous


def test_profile_is_json_and_warns() -> None:
    prof = risk_profile(TABLE, ["sex", "age"], sensitive="offence", severity={"Murder": 25, "Theft": 5, "Fraud": 5},
                        sampling_fraction=0.5)
    data = prof.summary()
    assert data["population"] == 12 and data["sampling_fraction"] == 0.5
    assert data["journalist"]["highest"] == pytest.approx(0.5)
    assert any("homogeneous" in w for w in data["warnings"])
    assert any("prosecutor risk above 0.2" in w for w in data["warnings"])
    assert math.isclose(sum(b["records"] for b in data["histogram"]), 6)
    with pytest.raises(ValueError, match="not both"):
        risk_profile(TABLE, ["sex"], population=10, sampling_fraction=0.5)


def test_qi_distinction_and_separation_by_hand() -> None:
    sex, age = qi_analysis(TABLE, ["sex", "age"])
    assert sex["distinction"] == pytest.approx(2 / 6) and age["distinction"] == pytest.approx(3 / 6)
    # sex: F x4, M x2 -> same-value ordered pairs 4*3 + 2*1 = 14 of 30
    assert sex["separation"] == pytest.approx(1 - 14 / 30)
    assert age["separation"] == pytest.approx(1 - (0 + 2 + 6) / 30)


def test_hypergeometric_matches_scipy() -> None:
    """Exact product form; scipy's pmf itself drifts by ~1e-8 relative at N = 1e8 (for j = 1 the exact
    value is n / N = 0.0002, scipy gives 0.0002000000015)."""
    assert hypergeom_one(10**8, np.array([1]), 20_000)[0] == 20_000 / 10**8
    sizes = np.array([1, 2, 3, 50, 990])
    for big, n in ((12, 6), (1000, 10), (1000, 999), (10**8, 20_000)):
        ok = sizes <= big
        assert hypergeom_one(big, sizes[ok], n) == pytest.approx(stats.hypergeom.pmf(1, big, sizes[ok], n),
                                                                 rel=1e-7, abs=1e-300)
