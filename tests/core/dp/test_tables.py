"""A count table round-trips through JSON and becomes the frame an analyst reads."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.dp.mechanism import Mechanism, noise_moments
from core.dp.tables import CountTable


def test_json_and_frame() -> None:
    table = CountTable(by=("region", "offence"), groups=(("A", "Theft"), ("B", "Theft")), counts=(3, -2),
                       ci95=5.0, mechanism="gaussian", rho=0.01, unit="report")
    assert CountTable.from_json(table.to_json()) == table
    assert table.to_json()["sd"] == pytest.approx(np.sqrt(50), rel=1e-9)  # σ = 1/√(2ρ), derived when not given
    frame = table.to_frame()
    assert list(frame.columns) == ["region", "offence", "count", "ci95"]
    assert frame["count"].tolist() == [3, -2] and table.name == "region x offence"
    with pytest.raises(ValueError, match="counts"):
        CountTable(by=("a",), groups=(("x",),), counts=(), ci95=1.0, mechanism="gaussian", rho=1.0, unit="report")


def test_sd_is_stated_and_tables_from_before_it_get_it_derived() -> None:
    """A table written before ``sd`` existed reads with the sd its mechanism and ρ imply (person: Δ = m)."""
    cases: tuple[tuple[Mechanism, str, int], ...] = (("gaussian", "report", 1), ("laplace", "report", 1),
                                                     ("gaussian", "person", 3))
    for mechanism, unit, m in cases:
        table = CountTable(by=("a",), groups=(("x",),), counts=(1,), ci95=9.0, mechanism=mechanism, rho=0.02,
                           unit=unit, max_contributions=m)
        old = {k: v for k, v in table.to_json().items() if k != "sd"}
        read = CountTable.from_json(old)
        exact = math.sqrt(noise_moments(0.02, mechanism, m)[1])
        assert read.sd == pytest.approx(exact, rel=1e-12) and read == table
    given = CountTable(by=("a",), groups=(("x",),), counts=(1,), ci95=9.0, mechanism="gaussian", rho=0.02,
                       unit="report", sd=4.5)
    assert CountTable.from_json(given.to_json()).sd == 4.5


def test_sum_ci95_is_exact_for_one_cell_and_normal_for_more() -> None:
    table = CountTable(by=("a",), groups=(("x",),), counts=(1,), ci95=21.0, mechanism="gaussian", rho=0.0044,
                       unit="report")
    assert table.sum_ci95(1) == 21.0
    assert table.sum_ci95(16) == pytest.approx(1.959963984540054 * table.sd * 4)
    with pytest.raises(ValueError, match="at least one cell"):
        table.sum_ci95(0)
