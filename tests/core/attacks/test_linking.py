"""The intersection attack of core.attacks.linking on hand-made releases and on real engine output."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.attacks import intersection_attack
from core.encoding import encode
from core.engines.registry import get_engine, make_params
from core.generators.crime import generate_crime_reports
from stream.io.specs import load_schema

SCHEMA = load_schema("crime")
QI = ["age", "sex", "suburb", "postcode", "reporter"]


def _rows(labels: list[tuple[str, str, str, str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(labels, columns=[*QI, "offence"])


def test_two_releases_disclose_what_neither_does_alone() -> None:
    person = pd.DataFrame([{"age": 34, "sex": "F", "suburb": "Gardens", "postcode": "8001", "reporter": "victim",
                            "offence": "Theft"}])
    a = _rows([("[30-39]", "*", "City Bowl", "800*", "Personal", o) for o in ("Theft", "Assault", "Fraud")]
              + [("[40-49]", "*", "City Bowl", "800*", "Personal", "Murder")] * 3)
    b = _rows([("[30, 40)", "F", "{Gardens,Bo-Kaap}", "{8001,8018}", "{victim,witness}", o)
               for o in ("Theft", "Robbery", "Rape")]
              + [("*", "*", "*", "****", "*", "Theft")])  # covers everyone, consistent with Theft
    res = intersection_attack([a, b], person, SCHEMA, k=3)
    out = res.outcomes[0]
    assert out.consistent == {"Theft"} and out.disclosed and not out.homogeneous
    assert out.candidates == 1 and out.single_min == 3 and out.narrowed  # a: one Theft row; b: two
    assert res.as_dict() == {"k": 3, "persons": 1, "linked": 1, "disclosed": 1, "narrowed": 1,
                             "homogeneous": 0, "inconsistent": 0}
    # known to be in one release only: no linking, nothing disclosed
    alone = intersection_attack([a, b], person, SCHEMA, k=3, membership=[[0]])
    assert alone.linked == 0 and alone.disclosed == 0 and alone.narrowed == 0


def test_homogeneity_is_counted_apart_from_linking() -> None:
    person = pd.DataFrame([{"age": 34, "sex": "F", "suburb": "Gardens", "postcode": "8001", "reporter": "victim",
                            "offence": "Theft"}])
    a = _rows([("[30-39]", "*", "*", "****", "*", "Theft")] * 3)
    res = intersection_attack([a, a], person, SCHEMA, k=3)
    assert res.homogeneous == 1 and res.disclosed == 0 and res.narrowed == 0


def test_real_engines_on_overlapping_days_are_attackable_without_guard() -> None:
    """Two separately anonymized days sharing 10 % of reports: kmember output leaks under linking."""
    day = generate_crime_reports(np.random.default_rng(3), per_day=400)
    other = generate_crime_reports(np.random.default_rng(4), per_day=400)
    shared = day.iloc[:40]
    second = pd.concat([other.iloc[40:], shared], ignore_index=True)
    results = {}
    for name in ("kmember", "optimal"):
        eng = get_engine(name)
        rels = [eng.anonymize(encode(d, SCHEMA), make_params(eng, {"k": 5}), np.random.default_rng(0)).rows
                for d in (day, second)]
        res = intersection_attack(rels, shared, SCHEMA, k=5)
        assert res.inconsistent == 0  # the truth always survives the intersection
        assert res.persons == 40 and res.linked == 40
        results[name] = res
    assert results["kmember"].narrowed > 0  # per-record classes compose badly
    assert results["kmember"].narrowed > results["optimal"].narrowed
