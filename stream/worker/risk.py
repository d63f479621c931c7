"""Risk bounds and the risk profile of a stream release (docs/risk.md).

The operator's ``max_risk`` / ``avg_risk`` settings are passed to engines that enforce them and are
always added to the requirement the independent verifier checks, so an engine that cannot enforce
them (e.g. ``cg-kanon``) has its violating releases held, never published.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from core.encoding import Schema
from core.engines.base import Engine, EngineParams, Release
from core.engines.registry import make_params
from core.privacy import PrivacyRequirement
from stream.config.settings import Settings

log = logging.getLogger(__name__)
RISK_BOUNDS = ("max_risk", "avg_risk")


def engine_params(settings: Settings, engine: Engine) -> EngineParams:
    """The engine's parameters for this feed's windows, through the one ``make_params``: the privacy
    settings (the risk bounds the engine cannot enforce left to the verifier), then ``engine_params``."""
    privacy = settings.privacy
    left = {b: None for b in RISK_BOUNDS if b not in engine.models}
    return make_params(engine, privacy.engine_params, requirement=privacy.model_copy(update=left))


def warn_unenforced(settings: Settings, engine: str, engine_models: tuple[str, ...]) -> list[str]:
    """At start-up: import the risk models (scipy) so the first release does not pay for it, and log
    the operator's risk bounds the engine cannot enforce; returns them."""
    import core.risk.profile  # noqa: F401  (import cost, about a second, taken before any window is claimed)

    left = [b for b in RISK_BOUNDS if getattr(settings.privacy, b) is not None and b not in engine_models]
    if left:
        log.warning("engine %s cannot enforce %s: the verifier will hold every window whose release exceeds it",
                    engine, ", ".join(left))
    return left


def policy_requirement(req: PrivacyRequirement, settings: Settings) -> PrivacyRequirement:
    """The engine's requirement tightened by the operator's risk bounds: what the verifier checks."""
    update = {}
    for b in RISK_BOUNDS:
        mine, theirs = getattr(settings.privacy, b), getattr(req, b)
        if mine is not None:
            update[b] = mine if theirs is None else min(mine, theirs)
    return req.model_copy(update=update) if update else req


def k_regular_risk(k: int, records: int, threshold: float) -> dict[str, Any]:
    """Risk of a heterogeneous (k-regular) release: each record has exactly k candidates, so the
    prosecutor risk of every record is 1/k; labels do not form classes, so the class-based figures
    (journalist, marketer, uniqueness, attribute disclosure) are not defined."""
    r = 1.0 / max(k, 1)
    return {"mode": "k-regular", "records": records, "threshold": threshold,
            "prosecutor": {"highest": r, "average": r, "records_at_risk": 1.0 if r > threshold else 0.0},
            "warnings": [f"every record has a prosecutor risk of {r:g}, above {threshold:g}"] if r > threshold else []}


def release_risk(schema: Schema, sample: pd.DataFrame, release: Release, sampling_fraction: float,
                 settings: Settings, where: dict[str, Any]) -> dict[str, Any]:
    """Risk profile of a verified release as JSON (for the manifest), logging its warnings with the
    release's ``window`` and ``release_id`` fields (``where``: :func:`stream.ops.logs.ctx`).

    The window's eligible reports are the population the sample was drawn from, so the journalist and
    marketer risks use ``sampling_fraction`` = sampled / eligible.
    """
    if release.verification_mode == "k-regular":
        return k_regular_risk(int(release.params.get("k", 1)), len(release.rows), settings.risk_threshold)
    from core.risk import risk_profile  # scipy, imported on the first release only

    spec = schema.spec
    risk = risk_profile(release.rows, schema.qi_names, original=sample, sensitive=schema.sensitive,
                        severity=spec.sensitive.severity if spec.sensitive else None,
                        sampling_fraction=sampling_fraction, threshold=settings.risk_threshold).summary()
    for warning in risk["warnings"]:
        log.warning("window %s, release %s: %s", where.get("window"), where.get("release_id"), warning, extra=where)
    return risk
