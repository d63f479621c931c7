"""What a release must satisfy: k-anonymity plus optional l-diversity, t-closeness and risk bounds."""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

LKind = Literal["distinct", "entropy", "recursive"]
TDistance = Literal["equal", "ordered"]


class PrivacyRequirement(BaseModel):
    """A privacy model as a constraint on equivalence classes.

    - ``k``: every released class has at least ``k`` rows (k-anonymity).
    - ``l`` with ``l_kind``: distinct l-diversity (at least ``l`` distinct sensitive values), entropy
      l-diversity (entropy of the class's sensitive distribution >= log ``l``), or recursive
      (c, l)-diversity (r1 < c (r_l + ... + r_m) over descending counts r), Machanavajjhala et al. 2007.
    - ``t`` with ``t_distance``: t-closeness (Li et al. 2007): the earth mover's distance between a
      class's sensitive distribution and the whole batch's is at most ``t``; ``equal`` ground
      distance (variational distance) for categorical values, ``ordered`` for ordinal values.
    - ``max_suppression``: fraction of rows that may be suppressed (removed) to meet the above.
    - ``max_risk``: highest prosecutor re-identification risk of a released record, 1 / |class|
      (docs/risk.md). It is a class-size bound: every class needs at least ``ceil(1 / max_risk)`` rows,
      so it is enforced as ``k_min`` (see :attr:`k_min`).
    - ``avg_risk``: average prosecutor risk over the released records, (#classes) / (#released rows).
      A global bound: it holds or fails for a release as a whole, it never suppresses a class.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    k: int = Field(default=5, ge=1, description="minimum class size (k-anonymity)")
    l: int | None = Field(default=None, ge=1, description="l-diversity level, if required")  # noqa: E741
    l_kind: LKind = Field(default="distinct", description="distinct | entropy | recursive")
    c: float = Field(default=2.0, gt=0, description="c of recursive (c,l)-diversity")
    t: float | None = Field(default=None, ge=0, le=1, description="t-closeness bound, if required")
    t_distance: TDistance = Field(default="equal", description="equal | ordered ground distance for t")
    max_suppression: float = Field(default=0.0, ge=0, le=1, description="fraction of rows that may be suppressed")
    max_risk: float | None = Field(default=None, gt=0, le=1,
                                   description="highest prosecutor risk 1/|class| allowed (docs/risk.md)")
    avg_risk: float | None = Field(default=None, gt=0, le=1,
                                   description="average prosecutor risk (#classes / #released) allowed")

    privacy_defaults: ClassVar[dict[str, Any]] = {}
    """Other defaults of some of the fields above, for a subclass (an engine's parameters, the stream's
    privacy settings), which keeps the fields declared here only: a value left out takes its default
    from this table, then from the field."""

    @model_validator(mode="before")
    @classmethod
    def _other_defaults(cls, data: Any) -> Any:
        if cls.privacy_defaults and isinstance(data, dict):
            return {**cls.privacy_defaults, **data}
        return data

    @classmethod
    def default_of(cls, name: str) -> Any:
        """The default of field ``name`` in this class (``privacy_defaults`` first)."""
        if name in cls.privacy_defaults:
            return cls.privacy_defaults[name]
        return cls.model_fields[name].get_default(call_default_factory=True)

    def requirement(self) -> PrivacyRequirement:
        """Just the privacy requirement (a subclass's other fields, such as an engine's, left out)."""
        if type(self) is PrivacyRequirement:
            return self
        return PrivacyRequirement(**{name: getattr(self, name) for name in PrivacyRequirement.model_fields})

    @model_validator(mode="after")
    def _l_needs_value(self) -> PrivacyRequirement:
        if self.l_kind != "distinct" and self.l is None:
            raise ValueError(f"l_kind '{self.l_kind}' needs a value for l")
        return self

    @property
    def k_min(self) -> int:
        """Smallest class size allowed: ``k``, raised to ``ceil(1 / max_risk)`` when a risk bound is set."""
        if self.max_risk is None:
            return self.k
        return max(self.k, math.ceil(1.0 / self.max_risk - 1e-9))

    def avg_risk_ok(self, classes: int, released: int) -> bool:
        """Does a release of ``released`` rows in ``classes`` classes meet ``avg_risk``?"""
        return self.avg_risk is None or released == 0 or classes <= self.avg_risk * released + 1e-9

    @property
    def needs_sensitive(self) -> bool:
        return (self.l is not None and self.l > 1) or self.t is not None

    def max_suppressed_rows(self, n: int) -> int:
        """How many of ``n`` rows may be suppressed (:func:`suppression_budget`)."""
        return suppression_budget(self.max_suppression, n)


def suppression_budget(fraction: float, n: int) -> int:
    """The most rows of ``n`` that a suppression limit ``fraction`` allows: ``fraction * n`` rounded down,
    with a hair of tolerance so that 0.04 of 500 rows is 20. The one rounding rule of the engines, the
    lattice evaluator and the verifier."""
    return int(np.floor(fraction * n + 1e-9))

