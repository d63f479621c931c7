"""The tables of ``bench/nesting_cost.py``: every bundled spec with data, plus generated skewed reports.

* ``adult``: ARX's Adult (``../shared/data/adult/adult.csv``) with the ``adult`` spec; occupation is
  the sensitive attribute (every occupation severity 1, so the CG engines run), the other 8 columns
  QIs on ARX's hierarchies (age categorical on ARX's 5/10/20-year tree);
* ``adult-uci``: raw UCI Adult (complete cases) with the ``adult-uci`` spec (age and hours-per-week
  numeric on 5/10/20/40 bands; occupation sensitive, severity 1);
* ``nypd``: NYPD arrests, Queens 2021, with the ``nypd`` spec (age group, sex, race, precinct tree,
  arrest date; offence sensitive with the spec's severities);
* ``crime``: reports of ``core.generators`` (seed 1) with the ``crime`` spec;
* ``crime-skewed``: the same generator (seed 2), then ages redrawn so most reports are 18-35 (85 %,
  uniform) with a long tail (36 + exponential, mean 10 years, capped at 95), sex 93 % M, suburbs
  Zipf-distributed (exponent 1.5: the busiest suburb holds a third of the reports) and reporters
  Zipf-distributed (exponent 2);
* ``skewed-age-sex``: ``crime-skewed`` with age and sex as the only QIs, where the rare tail weighs
  most.

Each is a random sample of ``rows`` rows (seed 0) unless ``rows`` is None (the whole table; the
generated ones have 10,000 rows then).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from bench._common import DATA
from core.encoding import Schema
from core.generators import generate_crime_reports
from core.schema import parse_spec
from stream.io.specs import load_schema
from stream.io.tables import read_for_spec

FULL_GENERATED = 10_000


def _sample(frame: pd.DataFrame, rows: int | None) -> pd.DataFrame:
    if rows is None or rows >= len(frame):
        return frame.reset_index(drop=True)
    return frame.sample(rows, random_state=0).reset_index(drop=True)


def _sensitive_severity_one(spec: dict, frame: pd.DataFrame, name: str) -> Schema:
    """The spec with QI or sensitive ``name`` as the sensitive attribute, every value severity 1."""
    spec = {**spec, "qi": [q for q in spec["qi"] if q["name"] != name]}
    spec["sensitive"] = {"name": name, "severity": dict.fromkeys(sorted(frame[name].astype(str).unique()), 1)}
    spec.pop("utility", None)
    return Schema.from_spec(parse_spec(spec))


def adult(rows: int | None) -> tuple[pd.DataFrame, Schema]:
    schema = load_schema("adult")
    frame = _sample(read_for_spec(DATA / "adult" / "adult.csv", schema.spec, schema), rows)
    return frame, _sensitive_severity_one(schema.spec.model_dump(), frame, "occupation")


def adult_uci(rows: int | None) -> tuple[pd.DataFrame, Schema]:
    schema = load_schema("adult-uci")
    frame = _sample(read_for_spec(DATA / "adult-uci" / "adult.data", schema.spec, schema), rows)
    return frame, _sensitive_severity_one(schema.spec.model_dump(), frame, "occupation")


def nypd(rows: int | None) -> tuple[pd.DataFrame, Schema]:
    schema = load_schema("nypd")
    path = DATA / "nypd-arrests-queens-2021" / "nypd_arrests_queens_2021.csv"
    return _sample(read_for_spec(path, schema.spec, schema), rows), schema


def crime(rows: int | None) -> tuple[pd.DataFrame, Schema]:
    return generate_crime_reports(np.random.default_rng(1), per_day=rows or FULL_GENERATED), load_schema("crime")


def _zipf(values: list[str], exponent: float, n: int, rng: np.random.Generator) -> np.ndarray:
    w = 1.0 / np.arange(1, len(values) + 1) ** exponent
    return rng.choice(np.array(values, dtype=object), n, p=w / w.sum())


def crime_skewed(rows: int | None) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(2)
    frame = generate_crime_reports(rng, per_day=rows or FULL_GENERATED)
    n = len(frame)
    tail = np.minimum(36 + np.floor(rng.exponential(10, n)), 95)
    frame["age"] = np.where(rng.random(n) < 0.85, rng.integers(18, 36, n), tail).astype(np.int64)
    frame["sex"] = np.where(rng.random(n) < 0.93, "M", "F")
    suburbs = frame.groupby("suburb")["postcode"].first()
    frame["suburb"] = _zipf(sorted(suburbs.index), 1.5, n, rng)
    frame["postcode"] = suburbs.loc[frame["suburb"]].to_numpy()
    frame["reporter"] = _zipf(sorted(frame["reporter"].unique()), 2.0, n, rng)
    return frame, load_schema("crime")


def skewed_age_sex(rows: int | None) -> tuple[pd.DataFrame, Schema]:
    frame, schema = crime_skewed(rows)
    spec = schema.spec.model_dump()
    spec["qi"] = [q for q in spec["qi"] if q["name"] in ("age", "sex")]
    spec.pop("utility", None)
    spec.pop("dp", None)
    return frame, Schema.from_spec(parse_spec(spec))


TABLES: dict[str, Callable[[int | None], tuple[pd.DataFrame, Schema]]] = {
    "adult": adult, "adult-uci": adult_uci, "nypd": nypd, "crime": crime, "crime-skewed": crime_skewed,
    "skewed-age-sex": skewed_age_sex,
}
