"""Differentially private count tables beside a release, charged to the blocks its windows declare.

When the spec has a ``[dp]`` table, every release carries noisy counts over the spec's groupings
(:func:`core.dp.plan.count_tables`, OpenDP's exact integer mechanisms) in its manifest's ``dp``
section. The order of a release with counts (docs/privacy.md, "Differentially private counts"):

1. **declared blocks**: the release's windows (the claimed window and those its push merged into it)
   declare their key and days; the blocks are those (``station:S1/day:2026-11-20`` by default). They
   are read from the windows, never from the reports, so one report can neither add a block to a
   release nor take its counts away.
2. **budget, before any noise is drawn**: each declared block's spend is read from the ledger; a block
   this release's ρ would take past its cap (the ledger's policy, :mod:`db.dp_policy`) is *refused*:
   its reports are not counted and it is not charged; the others are. The manifest names the refused
   blocks (declared, so public) and the refusal is counted (``dp-refused``); the k-anonymous microdata
   release goes out either way (it spends no DP budget).
3. **population**: the window's sample (released and suppressed alike) whose own block is one of the
   charged blocks; a report of another day (a late report carried in from a window of another day)
   is not counted, and neither is one without a person fingerprint when the unit is the person. The
   manifest says how many were not counted (``not_counted``), never which.
4. **noise**, over the public domains (periods from the declared days, categories from the spec).
5. **charge**, in the release's own transaction (:mod:`db.release_budget`): nothing is published
   before it commits; a crash before leaves neither the spend nor the tables, a re-publish sends the
   stored manifest, never new noise.

:func:`check_counts` refuses at start-up what would break the guarantee: a sample other than ``all``
(adding one report re-draws a seeded sample, so it would move many cells), the person unit without a
person fingerprint on every report, ``[dp] person`` columns other than the stream's, and a ledger
whose recorded policy disagrees with the spec.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from core.dp.blocks import declared_blocks, utc_days
from core.dp.derive import grouping_columns
from core.dp.mechanism import epsilon_from_rho
from core.dp.plan import count_tables
from core.encoding import Schema
from core.errors import ParamsError
from db import Candidate, Database
from db.budget import TOLERANCE, remaining
from db.dp_policy import PolicyMismatch, PolicyTerms, ensure_policy, read_policy
from db.models import Window
from db.release_budget import BudgetCharge, declared_periods
from stream.config.dp import check_dp_settings
from stream.config.feeds import feeds
from stream.ops.faults import crash_at
from stream.ops.logs import ctx
from stream.worker.delay_space import check_delay

log = logging.getLogger(__name__)
ALERT = logging.getLogger("anonstream.alert")
POPULATION = ("the window's sample (the reports released or suppressed by this release) whose own block is one "
              "this release charged")
PERSON, BLOCK = "__person__", "__block__"


@dataclass(frozen=True)
class DpOutcome:
    """The manifest's ``dp`` section and what the release transaction charges for it."""

    section: dict[str, Any]
    charge: BudgetCharge


def period_days(periods: list[tuple[datetime, datetime]]) -> list[str]:
    """Every UTC day a set of ``[start, end)`` periods touches (``YYYY-MM-DD``, sorted)."""
    days: set[str] = set()
    for start, end in periods:
        day = start.date()
        while datetime.combine(day, datetime.min.time(), start.tzinfo) < end:
            days.add(day.isoformat())
            day += timedelta(days=1)
    return sorted(days)


def population(sample: list[Candidate], spec: Any) -> pd.DataFrame:
    """The sampled reports as a frame: their data, station and event time (the spec's column names) and
    their person key (the linking guard's keyed person fingerprint, when it has one)."""
    frame = pd.DataFrame([c.data for c in sample])
    frame[spec.station_column or "station_id"] = [c.station_id for c in sample]
    frame[spec.time_column or "event_time"] = pd.to_datetime([c.event_time for c in sample], utc=True)
    frame[PERSON] = [c.person_fp for c in sample]
    return frame


def _budget_rows(delta: float, caps: dict[str, tuple[float, float]], blocks: list[str], cap_rho: float,
                 rho: float) -> list[dict[str, Any]]:
    """Each block's cap, spend and what remains after charging ``rho`` (ρ, and ε at the policy's δ)."""
    rows = []
    for b in blocks:
        cap, spent = caps.get(b, (cap_rho, 0.0))
        after = float(spent) + rho
        rows.append({"block": b, "cap_rho": float(cap), "spent_rho": after,
                     "remaining_rho": max(float(cap) - after, 0.0),
                     "cap_epsilon": epsilon_from_rho(float(cap), delta),
                     "spent_epsilon": epsilon_from_rho(after, delta)})
    return rows


def refusal_message(blocks: list[str], caps: dict[str, tuple[float, float]], cap_rho: float, rho: float,
                    delta: float) -> str:
    """One line naming the refused blocks and what the first of them has left."""
    cap, spent = caps.get(blocks[0], (cap_rho, 0.0))
    left = max(cap - spent, 0.0)
    more = f" (and {len(blocks) - 1} more block(s): {', '.join(blocks[1:4])})" if len(blocks) > 1 else ""
    return (f"privacy budget of block {blocks[0]}{more} would be exceeded: this release needs rho {rho:.4g}, the "
            f"block has rho {left:.4g} left of {cap:.4g} (about epsilon {epsilon_from_rho(left, delta):.3g}); its "
            "reports are not counted, the microdata release goes out")


def _blocks(spec: Any, window: Window, days: list[str], feed: str) -> tuple[list[str], dict[str, str]]:
    """The declared blocks and, per declared day, its block."""
    by = spec.dp.block
    per_day = {d: declared_blocks(by, keys=[window.key], days=[d], feed=feed, dataset=spec.name)[0] for d in days}
    return sorted(set(per_day.values())), per_day


def dp_counts(db: Database, schema: Schema, sample: list[Candidate], window: Window, feed: str = "default",
              fault_point: str | None = None, release_id: str | None = None) -> DpOutcome | None:
    """The count tables of release ``release_id`` over ``sample``, with what it charges; None when the
    spec has no ``[dp]``."""
    spec = schema.spec
    cfg = spec.dp
    if cfg is None or not sample:
        return None
    with db.read() as s:
        days = period_days(declared_periods(s, window.id))
        policy = read_policy(s)
        blocks, per_day = _blocks(spec, window, days, feed)
        caps = remaining(s, blocks)
    if policy is None:
        raise ParamsError("the ledger has no privacy policy: the worker records it at start-up")
    rho, cap_rho = cfg.rho, policy.cap_rho
    caps = {b: (min(float(cap), cap_rho), float(spent)) for b, (cap, spent) in caps.items()}  # as charge() caps
    refused = [b for b in blocks if caps.get(b, (cap_rho, 0.0))[1] + rho > caps.get(b, (cap_rho, 0.0))[0]
               * (1 + TOLERANCE)]
    charged = [b for b in blocks if b not in refused]
    head: dict[str, Any] = {"mechanism": cfg.mechanism, "unit": cfg.unit, "epsilon": float(cfg.epsilon),
                            "delta": float(cfg.delta), "population": POPULATION, "block_by": cfg.block,
                            "days": [days[0], days[-1]] if days else [], "refused_blocks": refused}
    station = window.key.split("station:", 1)[1] if "station:" in window.key else ""
    message = refusal_message(refused, caps, cap_rho, rho, cfg.delta) if refused else None
    if message:
        ALERT.warning("window %s: %s", window.id, message, extra=ctx(release_id, window.id))
    frame = population(sample, spec)
    time_col = spec.time_column or "event_time"
    row_day = utc_days(frame[time_col], time_col)
    block_of = row_day.map(per_day)
    counted = block_of.isin(set(charged)) & (frame[PERSON].notna() if cfg.unit == "person" else True)
    head["not_counted"] = int((~counted).sum())
    if not charged:
        section = {**head, "rho": 0.0, "tables": [], "refused": {"block": refused[0], "message": message},
                   "blocks": _budget_rows(cfg.delta, caps, blocks, cap_rho, 0.0)}
        return DpOutcome(section, BudgetCharge([], 0.0, cap_rho, refused=station))
    charged_days = [d for d in days if per_day[d] in set(charged)]
    grouped, domains = grouping_columns(frame[counted.to_numpy()], spec, charged_days)
    grouped[PERSON], grouped[BLOCK] = frame.loc[counted.to_numpy(), PERSON], block_of[counted.to_numpy()]
    tables = count_tables(grouped, [tuple(g) for g in cfg.groupings], domains, rho, unit=cfg.unit,
                          person_column=PERSON if cfg.unit == "person" else None, block_column=BLOCK,
                          max_contributions=cfg.max_contributions, mechanism=cfg.mechanism)
    crash_at("after-noise", fault_point)
    section = {**head, "rho": rho, "tables": [t.to_json() for t in tables],
               "refused": None, "refused_message": message,
               "blocks": _budget_rows(cfg.delta, caps, charged, cap_rho, rho)
               + _budget_rows(cfg.delta, caps, refused, cap_rho, 0.0)}
    seen = {b: float(caps.get(b, (cap_rho, 0.0))[1]) for b in charged}
    return DpOutcome(section, BudgetCharge(charged, rho, cap_rho, seen, refused=station if refused else None))


def policy_terms(settings: Any, spec: Any) -> PolicyTerms:
    """The policy terms this worker's spec and settings would record (or must agree with)."""
    cfg = spec.dp
    names = tuple(sorted({f.feed for f in feeds(settings)} | {settings.feed}))
    return PolicyTerms(cfg.block, float(cfg.cap_epsilon), float(cfg.cap_rho), float(cfg.delta),
                       float(cfg.max_epsilon), names)


def check_counts(schema: Schema, settings: Any = None, db: Database | None = None) -> None:
    """Refuse now (at start-up), with one line, what would make the counts wrong or their guarantee
    false: groupings without a public domain, a sample other than ``all``, the person unit without every
    report's person fingerprint, and a ledger whose policy disagrees (recorded here when it has none)."""
    if settings is not None and settings.delay.enabled:
        check_delay(settings, schema)  # delay mode's own refusals (stream/worker/delay_space.py)
    spec = schema.spec
    cfg = spec.dp
    if cfg is None:
        return
    names = [q.name for q in spec.qi] + ([spec.sensitive.name] if spec.sensitive is not None else [])
    frame = pd.DataFrame({n: pd.Series(dtype=object) for n in names})
    frame[spec.station_column or "station_id"] = pd.Series(dtype=object)
    frame[spec.time_column or "event_time"] = pd.Series(dtype="datetime64[ns, UTC]")
    grouping_columns(frame, spec, [])
    if settings is None:
        return
    check_dp_settings(settings, cfg)
    if db is not None:
        terms = policy_terms(settings, spec)
        try:
            with db.unit() as s:
                ensure_policy(s, terms, (settings.feed,), actor=f"worker:{settings.feed}")
        except PolicyMismatch as exc:
            raise ParamsError(f"ledger: {exc}", reason="invalid-setting") from None
