"""Prometheus metrics (``prometheus-client``) and readiness, served on the worker's web port.

``GET /metrics`` has two kinds of series (docs/operations.md lists them all):

* this worker's own counters and histograms, counted as it works (``anonstream_reports_ingested_total``,
  ``..._rejected_total{reason}``, ``..._release_stage_seconds{stage}`` …); they start at zero with the
  process, and Prometheus sums them over the workers;
* the ledger's state, read from the database at scrape time (``anonstream_pool_pending{window_key}``,
  ``anonstream_windows{state}``, ``anonstream_releases{state}`` …): the same for every worker.

``GET /ready`` answers 200 when the database answers ``SELECT 1`` and the broker accepts a
connection, else 503 naming what is down (the compose healthcheck uses it). ``GET /live`` is 200
while the event loop runs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from stream.worker.throttle import FailureLog

log = logging.getLogger(__name__)
STAGES = ("claim", "sample", "anonymize", "verify", "store", "publish")
REFUSALS = ("risk", "budget", "verification", "conflict", "engine")  # why a window was held (the last: any other)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class WorkerMetrics:
    """One registry per worker process (tests may run several services in one interpreter)."""

    def __init__(self, db: Any | None = None, child_pids: Callable[[], Iterable[int]] | None = None) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.ingested = Counter("anonstream_reports_ingested", "Reports accepted into the pending pool", registry=r)
        self.rejected = Counter("anonstream_reports_rejected", "Reports rejected (dead-lettered), by reason",
                                ["reason"], registry=r)
        self.duplicates = Counter("anonstream_reports_duplicates", "Duplicate and corrected reports, by kind",
                                  ["kind"], registry=r)
        self.dlq_sent = Counter("anonstream_dlq_sent", "Dead letters sent to the DLQ topic, by reason", ["reason"],
                                registry=r)
        self.failures = Counter("anonstream_failures", "Failures of the worker's retried operations (database or "
                                "broker unreachable), by kind; the log says each kind at most once per 30 s",
                                ["kind"], registry=r)
        self.releases_published = Counter("anonstream_releases_published", "Releases published by this worker, "
                                          "per feed", ["feed"], registry=r)
        self.stage = Histogram("anonstream_release_stage_seconds", "Release latency by stage", ["stage"],
                               buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300), registry=r)
        self.last_k = Gauge("anonstream_last_release_k", "Achieved k of the last release published here",
                            ["feed"], registry=r)
        self.last_l = Gauge("anonstream_last_release_l", "Achieved l of the last release published here (0: none)",
                            ["feed"], registry=r)
        self.last_loss = Gauge("anonstream_last_release_information_loss",
                               "Information loss of the last release published here", ["feed"], registry=r)
        self.last_size = Gauge("anonstream_last_release_records", "Records in the last release published here",
                               ["feed"], registry=r)
        self.last_max_risk = Gauge("anonstream_last_release_max_risk",
                                   "Highest prosecutor re-identification risk in the last release published here",
                                   ["feed"], registry=r)
        self.last_avg_risk = Gauge("anonstream_last_release_avg_risk",
                                   "Average prosecutor re-identification risk in the last release published here",
                                   ["feed"], registry=r)
        self.last_at_risk = Gauge("anonstream_last_release_records_at_risk",
                                  "Share of the last release's records above the risk threshold", ["feed"], registry=r)
        self.last_warnings = Gauge("anonstream_last_release_risk_warnings",
                                   "Risk warnings (homogeneous classes, records above the threshold) of the last "
                                   "release published here", ["feed"], registry=r)
        if db is not None or child_pids is not None:
            r.register(_StateCollector(db, child_pids, self.failure))
        for stage in STAGES:
            self.stage.labels(stage)

    # --- hooks called by the worker --------------------------------------------------------------
    def failure(self, kind: str) -> None:
        self.failures.labels(kind.replace(" ", "_")).inc()

    def batch(self, accepted: int, duplicates: int, corrections: int, rejected_reasons: Iterable[str]) -> None:
        self.ingested.inc(accepted)
        if duplicates:
            self.duplicates.labels("duplicate").inc(duplicates)
        if corrections:
            self.duplicates.labels("correction").inc(corrections)
        for reason in rejected_reasons:
            self.rejected.labels(reason).inc()
            self.dlq_sent.labels(reason).inc()

    def released(self, manifest: bytes, release_seconds: float | None, publish_seconds: float,
                 timings: dict[str, float] | None = None, feed: str = "default") -> None:
        """A release of ``feed`` was published: its stage timings (from the ledger: the manifest carries none,
        so that it is reproducible), k, l and loss."""
        self.releases_published.labels(feed).inc()
        self.stage.labels("publish").observe(publish_seconds)
        try:
            m = json.loads(manifest)
        except ValueError:
            return
        timings = timings or {}
        parts = {"sample": timings.get("candidates_s"), "anonymize": timings.get("anonymize_s"),
                 "verify": timings.get("verify_s")}
        for stage, seconds in parts.items():
            if isinstance(seconds, int | float):
                self.stage.labels(stage).observe(seconds)
        if release_seconds is not None:  # the rest of the release call: the ledger write, the hand-off from
            # the release process and any wait for a free one (a fresh process's first release: its warm-up)
            computed = sum(v for v in parts.values() if isinstance(v, int | float))
            self.stage.labels("store").observe(max(release_seconds - computed, 0.0))
        if isinstance(m.get("k"), int):
            self.last_k.labels(feed).set(m["k"])
        self.last_l.labels(feed).set(m["l"] if isinstance(m.get("l"), int) else 0)
        loss = (m.get("metrics") or {}).get("gcp")
        if isinstance(loss, int | float):
            self.last_loss.labels(feed).set(loss)
        counts = m.get("counts") or {}
        if isinstance(counts.get("released"), int):
            self.last_size.labels(feed).set(counts["released"])
        self._risk((m.get("privacy") or {}).get("risk") or {}, feed)

    def _risk(self, risk: dict[str, Any], feed: str) -> None:
        """The release's prosecutor risk figures (manifest ``privacy.risk``, docs/risk.md)."""
        prosecutor = risk.get("prosecutor") or {}
        for gauge, key in ((self.last_max_risk, "highest"), (self.last_avg_risk, "average"),
                           (self.last_at_risk, "records_at_risk")):
            if isinstance(prosecutor.get(key), int | float):
                gauge.labels(feed).set(prosecutor[key])
        self.last_warnings.labels(feed).set(len(risk.get("warnings") or []))

    def scrape(self) -> bytes:
        return generate_latest(self.registry)


class _StateCollector:
    """The ledger's state at scrape time (cached for a second), and the release processes' memory."""

    def __init__(self, db: Any | None, child_pids: Callable[[], Iterable[int]] | None,
                 on_failure: Callable[[str], None] | None = None) -> None:
        self.db, self.child_pids = db, child_pids
        self._cache: tuple[float, list[Any]] = (0.0, [])
        self._failures = FailureLog(log, on_failure=on_failure)  # scraped every few s: one line per 30 s

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterable[Any]:
        if self.db is not None:
            at, families = self._cache
            if time.monotonic() - at > 1.0:
                try:
                    families = ledger_families(self.db)
                    self._failures.recovered("metrics ledger read")
                except Exception as exc:  # database down: the scrape still answers; /ready says why
                    self._failures.failed("metrics ledger read", exc, "metrics: ledger unreadable, scrapes answer "
                                          "without the ledger's figures", logging.WARNING)
                    families = []
                self._cache = (time.monotonic(), families)
            yield from families
        if self.child_pids is not None:
            mem = GaugeMetricFamily("anonstream_release_process_memory_bytes",
                                    "Resident memory of each release process", labels=["pid"])
            for pid in self.child_pids():
                rss = _rss(pid)
                if rss is not None:
                    mem.add_metric([str(pid)], rss)
            yield mem


class _LagCollector:
    """Input lag of this worker's assigned partitions: high-water mark minus committed offset."""

    def __init__(self, app: Any, topics: dict[str, str]) -> None:
        self.app, self.topics = app, topics  # input topic -> feed

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterable[Any]:
        lag = GaugeMetricFamily("anonstream_consumer_lag", "Unread messages on the reports topic, per assigned "
                                "partition (high-water mark minus committed offset)", labels=["feed", "partition"])
        try:
            consumer = self.app.consumer
            committed = getattr(consumer, "_committed_offset", {})
            for tp in list(consumer.assignment()):
                if tp.topic not in self.topics:
                    continue
                high = consumer.highwater(tp)
                if high is None:
                    continue
                done = committed.get(tp)
                lag.add_metric([self.topics[tp.topic], str(tp.partition)],
                               max(int(high) - int(done if done is not None else 0), 0))
        except Exception as exc:  # not started yet, or rebalancing
            log.debug("metrics: no consumer lag (%s)", type(exc).__name__)
        yield lag


def _rss(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def ledger_families(db: Any) -> list[Any]:
    """Gauges of the pool, windows, releases and the ledger's report counters."""
    from sqlalchemy import func, select

    from db.models import AuditEntry, PendingReport, Release, Window
    from db.models import Counter as LedgerCounter

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
        budget = budget_family(s, now)
    return [pending, oldest, reports, counters, windows, releases, refusals, budget]


def budget_family(s: Any, now: datetime, days: int = 8) -> Any:
    """``anonstream_dp_budget_remaining_rho{block}``: each budget block's ρ left, for blocks charged in the last
    ``days`` days. Releases whose counts a cap refused: ``anonstream_ledger_counted{kind="dp-refused"}``."""
    from db.budget import all_blocks

    family = GaugeMetricFamily("anonstream_dp_budget_remaining_rho", "Privacy budget (rho, zCDP) left per "
                               "budget block (station or feed, day)", labels=["block"])
    for row in all_blocks(s):
        at = row.updated_at if row.updated_at is None or row.updated_at.tzinfo else row.updated_at.replace(tzinfo=UTC)
        if at is None or (now - at).days < days:
            family.add_metric([row.block], max(float(row.cap_rho) - float(row.spent_rho), 0.0))
    return family


# --- readiness ----------------------------------------------------------------------------------------
def readiness(settings: Any, timeout: float = 3.0) -> dict[str, Any]:
    """``{"ready": bool, "database": "ok"|error, "broker": "ok"|error}`` (blocking; run it in a thread)."""
    from stream.ops.locate import ServiceUnreachable, check_broker, check_database

    out: dict[str, Any] = {}
    for name, check in (("database", lambda: check_database(settings.db_url(), timeout)),
                        ("broker", lambda: check_broker(settings, timeout))):
        try:
            check()
            out[name] = "ok"
        except ServiceUnreachable as exc:
            out[name] = exc.message
    out["ready"] = all(v == "ok" for v in out.values())
    return out


def install(app: Any, settings: Any, metrics: WorkerMetrics, inputs: dict[str, str] | None = None) -> None:
    """Add ``/metrics``, ``/ready`` and ``/live`` to the faust app's web server (``inputs``: input topic ->
    feed; default the settings' one feed)."""

    async def metrics_view(self: Any, request: Any) -> Any:
        body = await asyncio.to_thread(metrics.scrape)
        return self.bytes(body, content_type="text/plain; version=0.0.4", headers={"charset": "utf-8"})

    async def ready_view(self: Any, request: Any) -> Any:
        state = await asyncio.to_thread(readiness, settings)
        return self.json(state, status=200 if state["ready"] else 503)

    async def live_view(self: Any, request: Any) -> Any:
        return self.json({"live": True, "pid": os.getpid()})

    metrics.registry.register(_LagCollector(app, inputs or {settings.topic_reports: settings.feed}))
    app.page("/metrics")(metrics_view)
    app.page("/ready")(ready_view)
    app.page("/live")(live_view)
