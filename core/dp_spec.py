"""The spec's ``[dp]`` table (which count tables a release carries and what they may spend) and the
ε/ρ conversions its budget is stated in.

Declared once, here, below both :mod:`core.schema` (whose :class:`~core.schema.DatasetSpec` has it as
``dp``, off when absent) and :mod:`core.dp` (which spends it), so that neither imports the other's
folder. The format, with the crime spec's example, is in docs/spec.md and docs/privacy.md.

The conversion from ρ-zCDP to (ε, δ)-DP is OpenDP's own (``make_zCDP_to_approxDP``, the tight bound of
Canonne, Kamath & Steinke 2020): :func:`epsilon_from_rho` asks OpenDP (imported on first use),
:func:`rho_from_epsilon` inverts it by bisection and never returns a ρ whose ε exceeds the one asked.
"""

from __future__ import annotations

import functools
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# Sane ranges of the parameters (checked before anything is allocated): outside them a count is
# either pure noise (tiny ε: σ in the millions, a noise table of gigabytes) or barely protected.
EPSILON_RANGE = (1e-3, 100.0)
DELTA_RANGE = (1e-12, 1e-2)


def _check_delta(delta: float) -> None:
    if not DELTA_RANGE[0] <= delta <= DELTA_RANGE[1]:
        raise ValueError(f"delta must be between {DELTA_RANGE[0]:g} and {DELTA_RANGE[1]:g} (got {delta:g})")


@functools.lru_cache(maxsize=256)
def epsilon_from_rho(rho: float, delta: float) -> float:
    """The ε of (ε, δ)-DP that ρ-zCDP implies, by OpenDP's own conversion (``make_zCDP_to_approxDP``)."""
    if not rho >= 0 or not math.isfinite(rho):
        raise ValueError(f"need a finite rho >= 0 (got {rho})")
    _check_delta(delta)
    if rho == 0:
        return 0.0
    import opendp.prelude as dp

    dp.enable_features("contrib")
    meas = dp.m.make_gaussian(dp.atom_domain(T=dp.i64), dp.absolute_distance(T=dp.i64), scale=1 / math.sqrt(2 * rho))
    return float(dp.c.make_zCDP_to_approxDP(meas).map(1).epsilon(delta))


@functools.lru_cache(maxsize=256)
def rho_from_epsilon(epsilon: float, delta: float) -> float:
    """The largest ρ (to 1e-10 relative) whose zCDP guarantee implies (ε, δ)-DP by OpenDP's conversion."""
    if not EPSILON_RANGE[0] <= epsilon <= EPSILON_RANGE[1] * 10:
        raise ValueError(f"need epsilon between {EPSILON_RANGE[0]:g} and {EPSILON_RANGE[1] * 10:g} (got {epsilon})")
    _check_delta(delta)
    log_term = math.log(1 / delta)
    lo = (math.sqrt(epsilon + log_term) - math.sqrt(log_term)) ** 2  # Bun & Steinke: always safe, a little low
    hi = lo * 2
    while epsilon_from_rho(hi, delta) <= epsilon:
        lo, hi = hi, hi * 2
    while hi - lo > lo * 1e-10:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if epsilon_from_rho(mid, delta) <= epsilon else (lo, mid)
    return lo


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DerivedColumn(_Strict):
    """A grouping column computed from a spec column: a QI's hierarchy level (``qi`` + ``level``, a
    level name such as ``"region"`` or a number, 1 = the first level above the leaves) or a period of
    the spec's time column (``time = "day" | "week" | "month"``)."""

    qi: str | None = None
    level: str | int | None = None
    time: Literal["day", "week", "month"] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> DerivedColumn:
        if (self.qi is None) == (self.time is None):
            raise ValueError("a derived column needs either qi (with level) or time")
        if self.qi is not None and self.level is None:
            raise ValueError(f"derived column of '{self.qi}' needs a level (a level name or number)")
        return self


class DPSpec(_Strict):
    """Differentially private counts (docs/privacy.md "Differentially private counts").

    ``epsilon`` is spent per release (split evenly over ``groupings``), ``max_epsilon`` is the most one
    query may spend (a ledger records it, with the cap and the block scheme, when it is created),
    ``cap_epsilon`` is each block's lifetime cap; with ``mechanism = "gaussian"`` both are turned into ρ
    (zCDP) at ``delta``.
    ``unit = "person"`` bounds each person (the columns ``person``) to ``max_contributions`` reports per
    block. ``domains`` gives the public values of a grouping column the spec cannot tell (a sensitive
    attribute's severity list, a hierarchy's leaves and derived columns are known already).
    """

    groupings: tuple[tuple[str, ...], ...] = Field(min_length=1)
    columns: dict[str, DerivedColumn] = Field(default_factory=dict)
    domains: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    epsilon: float = Field(default=1.0, ge=1e-3, le=10)
    max_epsilon: float = Field(default=1.0, ge=1e-3, le=10)
    delta: float = Field(default=1e-6, ge=1e-12, le=1e-2)
    cap_epsilon: float = Field(default=10.0, ge=1e-3, le=100)
    mechanism: Literal["gaussian", "laplace"] = "gaussian"
    block: Literal["station-day", "feed-day", "dataset"] = "station-day"
    unit: Literal["report", "person"] = "report"
    person: tuple[str, ...] = ()
    max_contributions: int = Field(default=1, ge=1, le=1000)

    @model_validator(mode="after")
    def _consistent(self) -> DPSpec:
        if any(not g for g in self.groupings):
            raise ValueError("a grouping needs at least one column")
        if self.epsilon > self.max_epsilon:
            raise ValueError(f"epsilon {self.epsilon:g} is above the largest allowed per query, max_epsilon "
                             f"{self.max_epsilon:g}")
        if self.cap_epsilon < self.epsilon:
            raise ValueError(f"cap_epsilon {self.cap_epsilon} is below one release's epsilon {self.epsilon}")
        if self.unit == "person" and not self.person:
            raise ValueError("unit = \"person\" needs person = [the columns that identify a person]")
        return self

    @property
    def rho(self) -> float:
        """What one release spends on each of its blocks, in ρ (zCDP), for :func:`core.dp.plan.count_tables`.

        Gaussian: the ρ whose zCDP implies (``epsilon``, ``delta``)-DP. Laplace: each of the G tables gets
        pure ε/G (pure ε adds up to ``epsilon``), which is (ε/G)²/2 in ρ per table, ε²/(2G) in all."""
        if self.mechanism == "gaussian":
            return rho_from_epsilon(self.epsilon, self.delta)
        return self.epsilon**2 / (2 * len(self.groupings))

    @property
    def cap_rho(self) -> float:
        """Each block's lifetime cap in ρ: zCDP at ``cap_rho`` implies (``cap_epsilon``, ``delta``)-DP."""
        return rho_from_epsilon(self.cap_epsilon, self.delta)
