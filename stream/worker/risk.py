"""Risk bounds, l-diversity and the risk profile of a stream release (docs/risk.md).

The operator's ``max_risk`` / ``avg_risk`` settings and the feed's ``l`` (distinct 2 by default) are
passed to engines that enforce them and are always added to the requirement the independent verifier
checks, so an engine that cannot enforce them (e.g. ``cg-kanon`` for ``l``, or for the risk bounds) has
its violating releases held, never published, with a reason that says what to do (:func:`hold_reason`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from core.engines.registry import make_params
from core.privacy import PrivacyRequirement

if TYPE_CHECKING:  # types only: a batch run's risk step (risk_summary) loads no settings
    import pandas as pd

    from core.encoding import Schema
    from core.engines.base import Engine, EngineParams, Release
    from stream.config.settings import Settings

log = logging.getLogger(__name__)
RISK_BOUNDS = ("max_risk", "avg_risk")
L_FIELDS = ("l", "l_kind", "c")  # l-diversity: left to the verifier for an engine without the model "l"


def engine_params(settings: Settings, engine: Engine) -> EngineParams:
    """The engine's parameters for this feed's windows, through the one ``make_params``: the privacy
    settings (the risk bounds and l the engine cannot enforce left to the verifier), then ``engine_params``."""
    privacy = settings.privacy
    left: dict[str, Any] = {b: None for b in RISK_BOUNDS if b not in engine.models}
    if "l" not in engine.models:
        left.update({"l": None, "l_kind": PrivacyRequirement.default_of("l_kind"),
                     "c": PrivacyRequirement.default_of("c")})
    return make_params(engine, privacy.engine_params, requirement=privacy.model_copy(update=left))


def warn_unenforced(settings: Settings, engine: str, engine_models: tuple[str, ...]) -> list[str]:
    """At start-up: import the risk models (scipy) so the first release does not pay for it, and log
    the operator's risk bounds the engine cannot enforce; returns them."""
    import core.risk.profile  # noqa: F401  (import cost, about a second, taken before any window is claimed)

    left = [b for b in RISK_BOUNDS if getattr(settings.privacy, b) is not None and b not in engine_models]
    if _asks_l(settings.privacy) and "l" not in engine_models:
        left.append(f"l={settings.privacy.l}")
    if left:
        log.warning("engine %s cannot enforce %s: the verifier will hold every window whose release exceeds it",
                    engine, ", ".join(left))
    return left


def _asks_l(req: PrivacyRequirement) -> bool:
    return req.l is not None and req.l > 1


def policy_requirement(req: PrivacyRequirement, settings: Settings) -> PrivacyRequirement:
    """The engine's requirement tightened by the operator's risk bounds and the feed's l: what the verifier
    checks. An engine's own l stands when it is at least the feed's of the same kind."""
    update: dict[str, Any] = {}
    for b in RISK_BOUNDS:
        mine, theirs = getattr(settings.privacy, b), getattr(req, b)
        if mine is not None:
            update[b] = mine if theirs is None else min(mine, theirs)
    feed = settings.privacy
    if _asks_l(feed) and not (_asks_l(req) and req.l_kind == feed.l_kind and req.l >= feed.l  # type: ignore[operator]
                              and (req.l_kind != "recursive" or req.c <= feed.c)):
        update.update(l=feed.l, l_kind=feed.l_kind, c=feed.c)
    return req.model_copy(update=update) if update else req


def hold_reason(failures: list[str], settings: Settings, engine: str) -> str:
    """Why a window whose release failed verification is held; when l-diversity failed, also what to do."""
    reason = "verification failed: " + "; ".join(failures[:3])
    if any("l-diversity" in f for f in failures):
        reason += (f" -- the feed requires l={settings.privacy.l} ({settings.privacy.l_kind}) on the sensitive "
                   f"attribute and engine {engine} did not meet it: run an engine that enforces l (leave the "
                   "engine unset for the default cg-diverse, or mondrian), or set privacy l = 1 only if a class "
                   "whose members share one offence may be published")
    return reason


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
    risk = risk_summary(schema, sample, release, settings.risk_threshold, sampling_fraction)
    if release.verification_mode != "k-regular":
        log_warnings(release, risk, where)
    return risk


def risk_summary(schema: Schema, original: pd.DataFrame, release: Release, threshold: float,
                 sampling_fraction: float | None = None) -> dict[str, Any]:
    """The risk profile of a release as JSON: the one risk step of the stream (:func:`release_risk`) and of
    batch runs (:func:`stream.batch.run.anonymize_table`, the whole file taken as the population when
    ``sampling_fraction`` is None). A k-regular release gets :func:`k_regular_risk`."""
    if release.verification_mode == "k-regular":
        return k_regular_risk(int(release.params.get("k", 1)), len(release.rows), threshold)
    from core.risk import risk_profile  # scipy, imported on the first release only

    spec = schema.spec
    return risk_profile(release.rows, schema.qi_names, original=original, sensitive=schema.sensitive,
                        severity=spec.sensitive.severity if spec.sensitive else None,
                        sampling_fraction=sampling_fraction, threshold=threshold).summary()


def log_warnings(release: Release, risk: dict[str, Any], where: dict[str, Any]) -> None:
    """Each risk warning of a release: one that is expected for this engine and these settings at INFO,
    marked so (it recurs on every release until the settings change: stream/worker/risk_warnings.py);
    the others at WARNING, with what to do."""
    from stream.worker.risk_warnings import EXPECTED, MARKER, of_release

    for w in of_release(release.engine, release.params, release.diagnostics, risk):
        if w["kind"] == EXPECTED:
            log.info("window %s, release %s: %s (%s)", where.get("window"), where.get("release_id"), w["text"],
                     MARKER, extra=where)
        else:
            log.warning("window %s, release %s: %s: %s", where.get("window"), where.get("release_id"), w["text"],
                        w["why"], extra=where)
