"""The ledger's state as Prometheus families, read at scrape time (the same in every worker: take ``max``).

Pool, windows, releases, the ledger's counters, refusals by reason, and the privacy budget: each budget
block's ρ left and its cap (``anonstream_dp_budget_remaining_rho``, ``anonstream_dp_budget_cap_rho``) and
the releases whose differentially private counts a block's cap refused
(``anonstream_dp_refused_releases_total``, 0 until the first). docs/operations.md lists them all.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

REFUSALS = ("risk", "budget", "verification", "conflict", "engine")  # why a window was held (the last: any other)


def ledger_families(db: Any) -> list[Any]:
    """Gauges of the pool, windows, releases and the ledger's report counters."""
    from sqlalchemy import func, select

    from db.models import AuditEntry, PendingReport, Release, Window
    from db.models import Counter as LedgerCounter
    from db.release_budget import REFUSED_KIND

    now = datetime.now(UTC)
    pending = GaugeMetricFamily("anonstream_pool_pending", "Reports pending per window key", labels=["window_key"])
    oldest = GaugeMetricFamily("anonstream_pool_oldest_pending_seconds", "Age of the oldest pending report",
                               labels=["window_key"])
    reports = GaugeMetricFamily("anonstream_ledger_reports", "Accepted reports in the ledger by state",
                                labels=["state"])
    counters = GaugeMetricFamily("anonstream_ledger_counted", "Ledger counters (dlq, duplicate, correction) by "
                                 "reason", labels=["kind", "reason"])
    windows = GaugeMetricFamily("anonstream_windows", "Windows by state (carried, held, open …)", labels=["state"])
    releases = GaugeMetricFamily("anonstream_releases", "Releases by state (stored, published)", labels=["state"])
    refusals = CounterMetricFamily("anonstream_release_refusals", "Windows held, nothing published, since the ledger "
                                   "began (audit log), by reason: risk, budget, verification, conflict, engine",
                                   labels=["reason"])
    with db.read() as s:
        for key, n, first in s.execute(select(PendingReport.window_key, func.count(), func.min(
                PendingReport.received_at)).where(PendingReport.state == "pending")
                .group_by(PendingReport.window_key)).all():
            pending.add_metric([key], int(n))
            if first is not None:
                first = first if first.tzinfo else first.replace(tzinfo=UTC)
                oldest.add_metric([key], max((now - first).total_seconds(), 0.0))
        for state, n in s.execute(select(PendingReport.state, func.count()).group_by(PendingReport.state)).all():
            reports.add_metric([state], int(n))
        for kind, reason, n in s.execute(select(LedgerCounter.kind, LedgerCounter.reason, func.sum(
                LedgerCounter.count)).group_by(LedgerCounter.kind, LedgerCounter.reason)).all():
            counters.add_metric([kind, reason], int(n or 0))
        for state, n in s.execute(select(Window.state, func.count()).group_by(Window.state)).all():
            windows.add_metric([state], int(n))
        for state, n in s.execute(select(Release.state, func.count()).group_by(Release.state)).all():
            releases.add_metric([state], int(n))
        held: dict[str, int] = {r: 0 for r in REFUSALS}
        for (detail,) in s.execute(select(AuditEntry.detail).where(AuditEntry.action == "window-held")).all():
            why = str((detail or {}).get("reason") or "").lower()
            held[next((r for r in REFUSALS[:-1] if r[:6] in why), "engine")] += 1
        for reason, n in held.items():
            refusals.add_metric([reason], n)
        dp_refused = CounterMetricFamily("anonstream_dp_refused_releases", "Releases whose differentially private "
                                         "counts a budget block's cap refused (published without counts), since the "
                                         "ledger began")
        dp_refused.add_metric([], int(s.execute(select(func.coalesce(func.sum(LedgerCounter.count), 0)).where(
            LedgerCounter.kind == REFUSED_KIND)).scalar_one()))
        budget = budget_family(s, now)
    return [pending, oldest, reports, counters, windows, releases, refusals, *budget, dp_refused]


def budget_family(s: Any, now: datetime, days: int = 8) -> tuple[Any, Any]:
    """``anonstream_dp_budget_remaining_rho{block}`` and ``anonstream_dp_budget_cap_rho{block}``: each budget
    block's ρ left and its cap, for blocks charged in the last ``days`` days."""
    from db.budget import all_blocks

    family = GaugeMetricFamily("anonstream_dp_budget_remaining_rho", "Privacy budget (rho, zCDP) left per "
                               "budget block (station or feed, day)", labels=["block"])
    caps = GaugeMetricFamily("anonstream_dp_budget_cap_rho", "Privacy budget cap (rho, zCDP) per budget block "
                             "charged recently", labels=["block"])
    for row in all_blocks(s):
        at = row.updated_at if row.updated_at is None or row.updated_at.tzinfo else row.updated_at.replace(tzinfo=UTC)
        if at is None or (now - at).days < days:
            family.add_metric([row.block], max(float(row.cap_rho) - float(row.spent_rho), 0.0))
            caps.add_metric([row.block], float(row.cap_rho))
    return family, caps
