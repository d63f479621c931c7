"""The spec's [dp] table: validated with one-line errors; the bundled specs declare theirs."""

from __future__ import annotations

import pytest

from core.errors import SpecError
from core.schema import parse_spec
from stream.io.specs import load_spec_data

BASE = {"name": "t", "qi": [{"name": "sex", "type": "categorical", "hierarchy": {"rows": [["F", "*"], ["M", "*"]]}}]}


def test_off_when_absent_and_bundled_specs_declare_it() -> None:
    assert parse_spec(BASE).dp is None
    crime = load_spec_data("crime").dp
    assert crime is not None and crime.groupings == (("offence",), ("region", "offence"),
                                                     ("age_band", "sex", "offence"), ("week", "region"),
                                                     ("age_band", "sex"))
    assert load_spec_data("adult").dp is not None


@pytest.mark.parametrize(("dp", "message"), [
    ({"groupings": []}, "dp.groupings"),
    ({"groupings": [["sex"]], "epsilon": 2, "max_epsilon": 2, "cap_epsilon": 1}, "below one release"),
    ({"groupings": [["sex"]], "unit": "person"}, "person ="),
    ({"groupings": [["sex"]], "block": "hour"}, "must be one of"),
    ({"groupings": [["sex"]], "epsilon": 1e-12}, "greater than or equal to 0.001"),
    ({"groupings": [["sex"]], "delta": 1e-320}, "greater than or equal to 0.000000000001"),
    ({"groupings": [["sex"]], "cap_epsilon": 1000}, "less than or equal to 100"),
    ({"groupings": [["sex"]], "epsilon": 5}, "above the largest allowed per query"),
    ({"groupings": [["sex"]], "columns": {"w": {"qi": "sex"}}}, "needs a level"),
])
def test_bad_dp_tables(dp: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec({**BASE, "dp": dp})


def test_what_a_release_spends() -> None:
    from core.dp.mechanism import epsilon_from_rho, scale

    dp = parse_spec({**BASE, "dp": {"groupings": [["sex"]] * 4, "epsilon": 1.0, "cap_epsilon": 10.0}}).dp
    assert dp is not None
    assert epsilon_from_rho(dp.rho, dp.delta) == pytest.approx(1.0) and int(dp.cap_rho / dp.rho) == 63
    laplace = dp.model_copy(update={"mechanism": "laplace"})
    assert laplace.rho == pytest.approx(1 / 8)  # four tables of pure epsilon 1/4 each, (1/4)^2/2 in rho each
    assert 1 / scale(laplace.rho / 4, "laplace") == pytest.approx(0.25)  # each table's pure epsilon


def test_nypd_declares_counts_per_precinct_day() -> None:
    nypd = load_spec_data("nypd").dp
    assert nypd is not None and nypd.block == "station-day" and ("month", "area") in nypd.groupings
