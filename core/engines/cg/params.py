"""Parameters of the CG engines and the checks that turn a batch into k_min, cap and severities."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, field_validator, model_validator

from core.encoding import EncodedBatch
from core.engines.base import BandsParams
from core.errors import InfeasibleError, ParamsError, SpecError, preview

TIME_CAP_S = 60.0  # safety cap only; a 10,000-report window: ~3.2 CPU-s for both runs (bench/release_window.py)
MAX_SWEEPS = 100  # the deterministic work budget (docs/engines/cg-kanon.md, "Budget")


class CGParams(BandsParams):
    """Shared CG parameters. ``k`` is the paper's k_cons: every class has k_min = max(k, smallest severity
    in the batch) rows (eq. 4)."""

    cap_factor: float = Field(default=4.0, ge=1.0, description="class-size cap = floor(cap_factor * k_min)")
    time_limit: float = Field(default=TIME_CAP_S, ge=0,
                              description="safety cap in wall seconds, not the budget: the search stops at "
                                          "convergence or after max_iterations sweeps; if this cap binds first "
                                          "the release says so (diagnostics budget_cap_hit); 0 = no cap")
    max_iterations: int = Field(default=MAX_SWEEPS, ge=0,
                                description="work budget: most local-search sweeps over the batch (deterministic)")
    neighbours: int = Field(default=4, ge=1, le=64,
                            description="tuples on each side of a tuple (in two orderings) whose classes "
                                        "are tried as move/swap targets")
    weights: dict[str, float] | None = Field(default=None,
                                             description="QI weights overriding the spec's (A10:S5:R1 notation)")

    @model_validator(mode="after")
    def _checks(self) -> CGParams:
        if self.weights is not None:
            bad = [n for n, w in self.weights.items() if not w > 0]
            if bad:
                raise ValueError(f"weights must be positive; not positive for {bad[:5]}")
        if self.t is not None:
            raise ValueError("CG engines do not enforce t-closeness")
        return self


class CGKanonParams(CGParams):
    pass


class CGDiverseParams(CGParams):
    """``l`` is l_min: every class has at least l distinct offences (l >= 2)."""

    privacy_defaults: ClassVar[dict[str, Any]] = {"l": 3}  # l_min: diversity is what the engine is for (l >= 2)
    ase_rule: bool = Field(default=False,
                           description="also require distinct offences >= min(ceil(ASe), l_target) per class "
                                       "(the paper's ASe-vs-diversity rule, eq. 10)")
    degrade: bool = Field(default=True,
                          description="when the severity-weighted diversity target is unreachable for this batch, "
                                      "enforce distinct l as a constraint and minimise loss instead of chasing the "
                                      "target (which pushes rows into the top class); false = always chase")
    degraded_cap_factor: float = Field(default=200.0, ge=1.0,
                                       description="while degraded the class-size cap grows to the largest class "
                                                   "of Mondrian's partition, at most floor(factor * k_min), so "
                                                   "neighbouring classes may merge (never below cap_factor's cap)")

    @field_validator("l")
    @classmethod
    def _l_min(cls, value: int | None) -> int | None:
        if value is None or value < 2:
            raise ValueError("should be at least 2 (l_min: distinct offences per class)")
        return value

    @model_validator(mode="after")
    def _distinct_only(self) -> CGDiverseParams:
        if self.l_kind != "distinct":
            raise ValueError("cg-diverse enforces distinct l-diversity only (l_kind = 'distinct')")
        return self


def severities(batch: EncodedBatch, engine: str) -> np.ndarray:
    """Severity per row, after checking the spec has a table covering every offence, all positive."""
    spec = batch.schema.spec
    if batch.sensitive_codes is None or spec.sensitive is None:
        raise SpecError(f"{engine} needs a sensitive attribute with a severity table in the spec",
                        reason="invalid-spec")
    if batch.severity is None:
        raise SpecError(f"{engine} needs a severity table for sensitive attribute '{spec.sensitive.name}'",
                        reason="invalid-spec")
    labels, sev = batch.sensitive_labels, np.asarray(batch.severity, float)
    assert labels is not None  # set with sensitive_codes
    table = spec.sensitive.severity or {}
    if spec.sensitive.default_severity is None:
        missing = [v for v in labels if v not in table]
        if missing:
            raise SpecError(f"severity table lacks offence(s) present in the data: {preview(missing)}",
                            reason="unknown-offence")
    bad = [(str(v), s) for v, s in zip(labels, sev, strict=True) if not (np.isfinite(s) and s > 0)]
    if bad:
        raise SpecError("severity must be positive; not positive for "
                        + ", ".join(f"{v!r}={s:g}" for v, s in bad[:5]), reason="invalid-spec")
    return sev[batch.sensitive_codes]


def k_min_of(k_cons: int, row_severity: np.ndarray) -> tuple[int, float]:
    """k_min = max(k_cons, min severity in the batch) (eq. 4), rounded up for fractional severities."""
    smin = float(row_severity.min())
    return max(int(k_cons), math.ceil(smin - 1e-9)), smin


def cap_of(k_min: int, cap_factor: float) -> int:
    return max(k_min, math.floor(cap_factor * k_min + 1e-9))


def require_batch(batch: EncodedBatch, k_min: int, k_cons: int, smin: float) -> None:
    if batch.n < k_min:
        raise InfeasibleError(
            f"batch has {batch.n} rows but k_min={k_min} (max of k={k_cons} and the smallest severity "
            f"{smin:g}); needs {k_min - batch.n} more rows",
            reason="batch-too-small",
        )


def effective_weights(batch: EncodedBatch, override: dict[str, float] | None) -> np.ndarray:
    names = batch.schema.qi_names
    w = np.asarray(batch.weights, float).copy()
    if override:
        unknown = [n for n in override if n not in names]
        if unknown:
            raise ParamsError(f"parameter 'weights' names unknown QI(s) {preview(unknown)}; QIs are: "
                              f"{', '.join(names)}")
        for i, n in enumerate(names):
            if n in override:
                w[i] = float(override[n])
    return w
