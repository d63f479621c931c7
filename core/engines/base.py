"""The engine contract: one protocol, typed frozen parameters, and the :class:`Release` result."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar

import numpy as np
import pandas as pd
from pydantic import Field

from core.encoding import EncodedBatch
from core.errors import InfeasibleError
from core.privacy.requirement import PrivacyRequirement

Progress = Callable[[float, str], None]
"""Progress callback: fraction done in [0, 1] and a short message. Engines call it on long work."""

VerificationMode = Literal["classes", "k-regular"]
PRIVATE_DIAGNOSTICS = frozenset({"matching"})
"""Diagnostics that link released rows to input rows; never reported or published."""
TIMING_DIAGNOSTICS = frozenset({"loss_curve", "curve", "search_s", "trace", "start_time_s", "candidates_time_s",
                                "construction_time_s", "assign_time_s", "cluster_time_s"})
"""Diagnostics holding wall-clock measurements: the only ones that differ between two runs of the same
batch, parameters and seed (see :func:`reproducible_diagnostics`)."""


def reproducible_diagnostics(diagnostics: dict[str, Any]) -> dict[str, Any]:
    """The diagnostics without wall-clock measurements: identical for the same batch, parameters and
    seed whatever the machine load, unless ``budget_cap_hit`` says a safety cap cut the work short."""
    return {k: v for k, v in diagnostics.items() if k not in TIMING_DIAGNOSTICS}


def no_progress(_done: float, _message: str) -> None:
    return None


class EngineParams(PrivacyRequirement):
    """Parameters of an engine: the privacy requirement's fields (declared once, in
    :class:`~core.privacy.requirement.PrivacyRequirement`) and the engine's own, which engines add in a
    subclass. An engine whose privacy defaults differ from the requirement's (k 5, max_suppression 0)
    declares them in its subclass as ``privacy_defaults`` (``registry.privacy_defaults`` lists them all)."""


Bands = Literal["nested", "free"]


class BandsParams(EngineParams):
    """Parameters of the local-recoding engines that can release free ranges: the ``bands`` setting,
    declared here once (``anonymize --bands``, ``--param bands=...``, the stream's engine params)."""

    bands: Bands = Field(default="nested",
                         description="nested: each class's label per QI is the smallest node of the QI's hierarchy "
                                     "covering its values (bands on the hierarchy's grid, dates on day / month / "
                                     "year, categories on the tree), so released labels never overlap and counts "
                                     "add up; free: each class's own range or set (less loss, overlapping labels)")
    nesting_fallback: bool = Field(default=True,
                                   description="with nested bands, release as free ranges / sets each QI whose "
                                               "nested loss exceeds 1.25x the engine's free loss, or say why not "
                                               "(diagnostics nesting_fallback); false: every QI nested, no check")


@dataclass(frozen=True, eq=False)
class Release:
    """What an engine returns.

    ``rows`` holds the released rows with the input's index: QI columns contain generalized labels
    (strings), the sensitive and pass-through columns are unchanged. ``class_ids`` is aligned with
    ``rows``. ``suppressed`` holds the input index labels of suppressed rows. ``verification_mode``
    tells the independent verifier which guarantee to check.
    """

    engine: str
    params: dict[str, Any]
    requirement: PrivacyRequirement
    rows: pd.DataFrame
    class_ids: np.ndarray
    suppressed: np.ndarray
    metrics: dict[str, Any]
    privacy: dict[str, Any]
    diagnostics: dict[str, Any] = field(default_factory=dict)
    runtime_s: float = 0.0
    verification_mode: VerificationMode = "classes"

    @property
    def released(self) -> int:
        return len(self.rows)

    def digest(self) -> str:
        """SHA-256 of the released content: rows (as CSV), class ids and suppressed index labels."""
        h = hashlib.sha256(self.rows.to_csv().encode())
        h.update(np.asarray(self.class_ids).astype(np.int64).tobytes())
        h.update(repr(sorted(map(str, self.suppressed))).encode())
        return h.hexdigest()

    def summary(self) -> dict[str, Any]:
        """Report of the release. The heterogeneous ``matching`` (true-match structure) is left out:
        it must never leave the process with the rows."""
        diagnostics = {k: v for k, v in self.diagnostics.items() if k not in PRIVATE_DIAGNOSTICS}
        return {
            "engine": self.engine, "params": self.params, "released": self.released,
            "suppressed": len(self.suppressed), "privacy": self.privacy, "metrics": self.metrics,
            "runtime_s": round(self.runtime_s, 4), "diagnostics": diagnostics,
        }


P = TypeVar("P", bound=EngineParams)
"""An engine's parameter type: ``Engine[KgenParams]`` takes ``KgenParams`` in :meth:`Engine.anonymize`."""


class Engine(ABC, Generic[P]):
    """An anonymization engine. Deterministic given the ``rng`` seed."""

    name: ClassVar[str]
    summary: ClassVar[str]
    paper: ClassVar[str] = ""
    Params: ClassVar[type[EngineParams]] = EngineParams
    models: ClassVar[tuple[str, ...]] = ("k", "l", "t", "max_risk", "avg_risk")
    """Privacy models the engine enforces; asking for another one raises ParamsError (see
    :func:`require_models`, also applied by ``registry.make_params``)."""
    needs: ClassVar[tuple[str, ...]] = ()
    """What the spec must give the engine besides quasi-identifiers: ``"sensitive"`` (a sensitive
    attribute), ``"severity"`` (a severity table on it). ``spec check --engine`` reports what is missing."""
    searches_lattice: ClassVar[bool] = False
    """The engine evaluates full-domain lattice nodes (core/lattice): a long-lived process loads the
    lattice kernels for it while warming up (:func:`core.engines.warmup.warm_up`)."""
    work_budgets: ClassVar[Mapping[str, int]] = {}
    """The parameters that bound the engine's work (iterations, passes, evaluations, ...), each with the value
    a warm-up cuts it to (:func:`core.engines.warmup.warm_params`). An engine with a wall-clock
    ``time_limit`` has at least one, so that a run can be bounded by work alone."""
    linking_exposed: ClassVar[bool] = False
    """Separately anonymized overlapping batches of this engine were found most exposed to intersection by
    the linking harness (bench/linking_attack.py, docs/privacy.md): a batch run without a ledger names it."""

    @abstractmethod
    def anonymize(self, batch: EncodedBatch, params: P, rng: np.random.Generator,
                  progress: Progress = no_progress) -> Release:
        """Anonymize an encoded batch under ``params``; never returns an unverified guarantee."""


def require_rows(batch: EncodedBatch, k: int, what: str = "k") -> None:
    """Fail clearly when the batch is too small for any class of size ``k``."""
    if batch.n < k:
        raise InfeasibleError(
            f"{what}={k} exceeds the number of rows ({batch.n}); {k - batch.n} more row(s) needed",
            reason="batch-too-small",
        )


def require_models(engine: Engine, params: EngineParams) -> None:
    """Reject parameters for privacy models the engine does not enforce."""
    from core.errors import ParamsError

    asked = [m for m, on in (("l", params.l is not None and params.l > 1), ("t", params.t is not None),
                             ("max_risk", params.max_risk is not None), ("avg_risk", params.avg_risk is not None))
             if on]
    missing = [m for m in asked if m not in engine.models]
    if missing:
        raise ParamsError(f"engine '{engine.name}' enforces {', '.join(engine.models)} only; "
                          f"it cannot guarantee {', '.join(missing)}")


def require_sensitive(batch: EncodedBatch, params: EngineParams) -> None:
    if params.requirement().needs_sensitive and batch.sensitive_codes is None:
        raise InfeasibleError("l-diversity or t-closeness needs a sensitive attribute in the spec",
                              reason="invalid-params")
