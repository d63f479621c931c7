"""One entry point, :func:`risk_profile`: every risk figure of a table or a release, typed and
JSON-serialisable (``profile.model_dump(mode="json")``)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from core.codes import carried
from core.risk.attribute import attribute_disclosure
from core.risk.classes import class_index, qi_analysis
from core.risk.population import uniqueness
from core.risk.reidentification import (
    DEFAULT_THRESHOLD,
    estimated_population_sizes,
    journalist,
    marketer,
    prosecutor,
    risk_histogram,
    sample_uniques,
)

__all__ = ["DEFAULT_THRESHOLD", "RiskProfile", "resolve_population", "risk_profile"]


class RecordRisk(BaseModel):
    """Highest and average risk of the released records and the share above the threshold."""

    highest: float
    average: float
    records_at_risk: float


class Uniqueness(BaseModel):
    """Population uniqueness of the input: estimated share of population records that are unique."""

    pitman: float | None
    zayatz: float | None
    snb: float | None
    dankar: float | None
    dankar_model: str | None


class Attribute(BaseModel):
    sensitive: str
    homogeneous_classes: int
    homogeneous_records: int
    max_sensitive_share: float
    delta_disclosure: float
    severe_at: float | None = None
    severe_records: int | None = None
    severe_in_homogeneous: int | None = None
    severe_in_small: int | None = None


class QuasiIdentifier(BaseModel):
    name: str
    distinction: float
    separation: float


class Bucket(BaseModel):
    low: float
    high: float
    records: int
    classes: int


class RiskProfile(BaseModel):
    """Risk figures of one table (docs/risk.md). Shares are fractions in [0, 1]."""

    model_config = ConfigDict(frozen=True)

    records: int = Field(description="records measured (released rows; suppressed rows excluded)")
    classes: int
    threshold: float
    sampling_fraction: float
    population: int
    prosecutor: RecordRisk
    journalist: RecordRisk
    marketer: float
    sample_uniques: float = Field(description="share of measured records alone in their class")
    sample_uniques_input: float | None = Field(default=None, description="the same share in the input")
    population_uniqueness: Uniqueness
    attribute: Attribute | None = None
    histogram: list[Bucket]
    quasi_identifiers: list[QuasiIdentifier] = Field(default_factory=list,
                                                     description="distinction and separation of each QI")
    warnings: list[str]

    def summary(self) -> dict[str, object]:
        """The profile as plain JSON data."""
        return self.model_dump(mode="json")


def resolve_population(n: int, population: int | None = None,
                       sampling_fraction: float | None = None) -> tuple[float, int]:
    """Sampling fraction pi and population size N of a sample of ``n`` records; pi = 1 if neither is given."""
    if population is not None and sampling_fraction is not None:
        raise ValueError("give a population size or a sampling fraction, not both")
    if population is not None:
        if population < n:
            raise ValueError(f"population {population} is smaller than the sample ({n} records)")
        return (n / population if population else 1.0), max(population, n)
    if sampling_fraction is not None:
        if not 0 < sampling_fraction <= 1:
            raise ValueError(f"sampling fraction must be in (0, 1], got {sampling_fraction}")
        return sampling_fraction, max(round(n / sampling_fraction), n)
    return 1.0, n


def _warnings(prof: dict[str, float], attr: dict[str, object] | None, threshold: float,
              sensitive: str | None) -> list[str]:
    out = []
    at_risk = prof["records_at_risk"]
    if at_risk > 0:
        out.append(f"{at_risk:.1%} of records have a prosecutor risk above {threshold:g}")
    if attr and attr["homogeneous_classes"]:
        out.append(f"{attr['homogeneous_classes']} class(es) holding {attr['homogeneous_records']} record(s) are "
                   f"homogeneous in '{sensitive}': placing a person in one reveals the value")
    if attr and attr.get("severe_in_small"):
        out.append(f"{attr['severe_in_small']} severe record(s) sit in classes smaller than their severity")
    return out


def risk_profile(released: pd.DataFrame, qi: list[str], *, original: pd.DataFrame | None = None,
                 sensitive: str | None = None, severity: Mapping[str, float] | None = None,
                 severe_at: float | None = None, population: int | None = None,
                 sampling_fraction: float | None = None, threshold: float = DEFAULT_THRESHOLD) -> RiskProfile:
    """Risk profile of ``released`` (the released rows: generalized QI labels) or of an input table.

    ``original`` is the input the release came from (for sample uniques before anonymization and
    for the population uniqueness estimates); without it ``released`` is treated as the input.
    ``population`` or ``sampling_fraction`` describe the input as a sample of a population (neither:
    the input is the population, pi = 1). ``severity`` maps sensitive values to severities.
    """
    source = released if original is None else original
    pi, big_n = resolve_population(len(source), population, sampling_fraction)
    cls, sizes = class_index(released, qi)
    pros = prosecutor(sizes, threshold)
    pop_sizes = estimated_population_sizes(sizes, pi)
    jour = journalist(sizes, pop_sizes, threshold)
    input_sizes = sizes if original is None else class_index(original, qi)[1]
    attr = None
    if sensitive is not None and sensitive in released.columns and len(released):
        got = carried(released, sensitive)
        if got is not None and got.clean:  # each distinct value looked up once; its code stands for it
            sev = (None if severity is None else
                   pd.Series(got.uniques, dtype=object).map(severity).fillna(0.0).to_numpy(np.float64)[got.codes])
            attr = attribute_disclosure(cls, sizes, got.codes, sev, severe_at)
        else:
            values = released[sensitive]
            sev = None if severity is None else values.astype(str).map(severity).fillna(0.0).to_numpy(np.float64)
            attr = attribute_disclosure(cls, sizes, values.to_numpy(), sev, severe_at)
    return RiskProfile(
        records=len(released), classes=len(sizes), threshold=threshold, sampling_fraction=pi, population=big_n,
        prosecutor=RecordRisk(**pros), journalist=RecordRisk(**jour), marketer=marketer(sizes, pop_sizes),
        sample_uniques=sample_uniques(sizes),
        sample_uniques_input=None if original is None else sample_uniques(input_sizes),
        population_uniqueness=Uniqueness.model_validate(uniqueness(input_sizes, big_n)),
        attribute=None if attr is None else Attribute.model_validate({"sensitive": sensitive, **attr}),
        histogram=[Bucket.model_validate(b) for b in risk_histogram(sizes)],
        quasi_identifiers=[QuasiIdentifier.model_validate(q) for q in qi_analysis(released, qi)],
        warnings=_warnings(pros, attr, threshold, sensitive),
    )
