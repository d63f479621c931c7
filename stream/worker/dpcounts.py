"""Differentially private count tables beside a release, charged to the ledger's budget blocks.

When the spec has a ``[dp]`` table, every release carries noisy counts over the spec's groupings
(:func:`core.dp.plan.count_tables`, OpenDP's exact integer mechanisms) in its manifest's ``dp``
section. The order of a release with counts (docs/privacy.md, "Differential privacy"):

1. **population**: the window's sample, i.e. the reports that leave the pool with this release
   (released and suppressed alike). Reports the linking guard blocked are re-sends and not counted;
   eligible reports the sample held back stay pending and are counted by the release that later
   takes them. So every accepted report is counted by exactly one release, and summing a key's
   tables over its releases counts each report once.
2. **blocks**: the budget blocks those reports fall in (:func:`core.dp.blocks.block_keys`: (station,
   day) by default, or (feed, day)).
3. **budget check, before any noise is drawn**: each block's spend is read from the ledger; if this
   release's ρ would take any block over its cap, the counts are **refused**: no noise is drawn, the
   manifest says which block refused and what it has left, the refusal is counted (``dp-refused``),
   and the k-anonymous microdata release still goes out (it spends no DP budget; holding it would
   stall the feed for good, since a block's cap is for its lifetime).
4. **noise**: only then the tables are drawn.
5. **charge**: the spend is written in the release's own transaction (:mod:`db.release_budget`);
   a crash before the commit leaves neither the spend nor the noisy tables, which were never
   published; a re-publish sends the stored manifest, never new noise.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core.dp.blocks import row_blocks
from core.dp.derive import grouping_columns
from core.dp.mechanism import epsilon_from_rho
from core.dp.plan import count_tables
from core.encoding import Schema
from db import Candidate, Database
from db.budget import TOLERANCE, remaining
from db.release_budget import BudgetCharge
from stream.ops.logs import ctx
from stream.worker.faults import crash_at

log = logging.getLogger(__name__)
ALERT = logging.getLogger("anonstream.alert")
POPULATION = "the window's sample: the reports released or suppressed by this release"
PERSON, BLOCK = "__person__", "__block__"


@dataclass(frozen=True)
class DpOutcome:
    """The manifest's ``dp`` section and what the release transaction charges for it."""

    section: dict[str, Any]
    charge: BudgetCharge


def population(sample: list[Candidate], spec: Any) -> pd.DataFrame:
    """The counted reports as a frame: their data, station and event time (the spec's column names) and
    their person key (the linking guard's keyed person fingerprint, when it has one)."""
    frame = pd.DataFrame([c.data for c in sample])
    frame[spec.station_column or "station_id"] = [c.station_id for c in sample]
    frame[spec.time_column or "event_time"] = pd.to_datetime([c.event_time for c in sample], utc=True)
    frame[PERSON] = [c.person_fp for c in sample]
    return frame


def _budget_rows(cfg: Any, caps: dict[str, tuple[float, float]], blocks: list[str], cap_rho: float,
                 rho: float) -> list[dict[str, Any]]:
    """Each block's cap, spend and what remains after charging ``rho`` (ρ, and ε at the spec's δ)."""
    rows = []
    for b in blocks:
        cap, spent = caps.get(b, (cap_rho, 0.0))
        after = float(spent) + rho
        rows.append({"block": b, "cap_rho": float(cap), "spent_rho": after,
                     "remaining_rho": max(float(cap) - after, 0.0), "cap_epsilon": float(cfg.cap_epsilon),
                     "spent_epsilon": epsilon_from_rho(after, cfg.delta) if after > 0 else 0.0})
    return rows


def refusal_message(block: str, cap: float, spent: float, rho: float, delta: float) -> str:
    """One line naming the block that refused and what it has left."""
    left = max(cap - spent, 0.0)
    left_eps = epsilon_from_rho(left, delta) if left > 0 else 0.0
    return (f"privacy budget of block {block} would be exceeded: this release needs rho {rho:.4g}, "
            f"the block has rho {left:.4g} left of {cap:.4g} (about epsilon {left_eps:.3g}); counts refused, "
            "the microdata release goes out without them")


def dp_counts(db: Database, schema: Schema, sample: list[Candidate], window_id: str, feed: str = "default",
              fault_point: str | None = None, release_id: str | None = None) -> DpOutcome | None:
    """The count tables of release ``release_id`` over ``sample``, or their refusal; None when the spec has
    no ``[dp]``."""
    spec = schema.spec
    cfg = spec.dp
    if cfg is None or not sample:
        return None
    frame = population(sample, spec)
    station_col, time_col = spec.station_column or "station_id", spec.time_column or "event_time"
    rows = row_blocks(frame, by=cfg.block, station_column=station_col, date_column=time_col, feed=feed,
                      dataset=spec.name)
    blocks = sorted(set(rows.tolist()))
    rho, cap_rho = cfg.rho, cfg.cap_rho  # what one release spends per block, each block's lifetime cap (ρ)
    with db.read() as s:
        caps = remaining(s, blocks)
    unit = cfg.unit if cfg.unit == "report" or frame[PERSON].notna().all() else "report"
    if unit != cfg.unit:
        log.warning("window %s: unit person needs every report's person fingerprint (the linking guard's "
                    "person rule); counting per report", window_id, extra=ctx(release_id, window_id))
    head = {"mechanism": cfg.mechanism, "unit": unit, "epsilon": float(cfg.epsilon), "delta": float(cfg.delta),
            "population": POPULATION, "block_by": cfg.block}
    caps = {b: (min(float(cap), cap_rho), float(spent)) for b, (cap, spent) in caps.items()}  # as charge() caps
    for b in blocks:  # refused before any noise is drawn
        cap, spent = caps.get(b, (cap_rho, 0.0))
        if spent + rho > cap * (1 + TOLERANCE):
            message = refusal_message(b, float(cap), float(spent), rho, cfg.delta)
            ALERT.warning("window %s: %s", window_id, message, extra=ctx(release_id, window_id))
            station = b.split("/")[0].split(":", 1)[1] if b.startswith("station:") else ""
            section = {**head, "rho": 0.0, "tables": [], "refused": {"block": b, "message": message},
                       "blocks": _budget_rows(cfg, caps, blocks, cap_rho, 0.0)}
            return DpOutcome(section, BudgetCharge(blocks, 0.0, cap_rho, refused=station))
    grouped, domains = grouping_columns(frame, spec)
    grouped[PERSON], grouped[BLOCK] = frame[PERSON], rows
    tables = count_tables(grouped, [tuple(g) for g in cfg.groupings], domains, rho, unit=unit,
                          person_column=PERSON if unit == "person" else None, block_column=BLOCK,
                          max_contributions=cfg.max_contributions, mechanism=cfg.mechanism)
    crash_at("after-noise", fault_point)
    section = {**head, "rho": rho, "tables": [t.to_json() for t in tables], "refused": None,
               "blocks": _budget_rows(cfg, caps, blocks, cap_rho, rho)}
    seen = {b: float(caps.get(b, (cap_rho, 0.0))[1]) for b in blocks}
    return DpOutcome(section, BudgetCharge(blocks, rho, cap_rho, seen))


def check_counts(schema: Schema) -> None:
    """Raise the spec's error now (at start-up) if its ``[dp]`` groupings cannot be counted, e.g. a column
    without a public domain, rather than at every window's release."""
    spec = schema.spec
    if spec.dp is None:
        return
    names = [q.name for q in spec.qi] + ([spec.sensitive.name] if spec.sensitive is not None else [])
    frame = pd.DataFrame({n: pd.Series(dtype=object) for n in names})
    frame[spec.station_column or "station_id"] = pd.Series(dtype=object)
    frame[spec.time_column or "event_time"] = pd.Series(dtype="datetime64[ns, UTC]")
    grouping_columns(frame, spec)
