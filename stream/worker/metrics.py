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
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from stream.worker.ledger_metrics import REFUSALS, budget_family, ledger_families
from stream.worker.throttle import FailureLog

log = logging.getLogger(__name__)
__all__ = ["REFUSALS", "STAGES", "WorkerMetrics", "budget_family", "install", "ledger_families", "readiness"]
STAGES = ("claim", "sample", "anonymize", "verify", "store", "publish")
# The labels each counter starts with at 0, so that a dashboard shows 0 rather than "No data" and rate() sees
# the first event: the kinds of retried operations (FailureLog kinds, spaces as _), duplicate kinds, and the
# commonest dead-letter reasons (other reasons appear with their first report).
FAILURE_KINDS = ("window_tick", "pending_pool_write", "window_release", "lease_renewal", "heartbeat",
                 "metrics_ledger_read", "receipt", "advert")
DUPLICATE_KINDS = ("duplicate", "correction")
DLQ_REASONS = ("malformed-json", "not-an-object", "missing-field", "missing-value", "invalid-value", "invalid-time",
               "implausible-time", "invalid-report-id", "invalid-station", "unknown-station", "unknown-offence",
               "value-not-in-hierarchy", "ambiguous-date", "too-large", "malformed-marker", "internal-error")
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
                                   "Risk warnings of the last release published here, by kind: expected for the "
                                   "engine and settings, or unexpected (to act on)", ["feed", "kind"], registry=r)
        if db is not None or child_pids is not None:
            r.register(_StateCollector(db, child_pids, self.failure))
        for stage in STAGES:
            self.stage.labels(stage)
        for kind in FAILURE_KINDS:
            self.failures.labels(kind)
        for kind in DUPLICATE_KINDS:
            self.duplicates.labels(kind)
        for reason in DLQ_REASONS:
            self.rejected.labels(reason)
            self.dlq_sent.labels(reason)

    def feeds(self, names: Iterable[str]) -> None:
        """The feeds this worker serves: their per-feed counters start at 0."""
        for feed in names:
            self.releases_published.labels(feed)

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
        self._risk(m, feed)

    def _risk(self, manifest: dict[str, Any], feed: str) -> None:
        """The release's prosecutor risk figures (manifest ``privacy.risk``, docs/risk.md) and its warnings by kind
        (:mod:`stream.worker.risk_warnings`)."""
        from stream.worker.risk_warnings import EXPECTED, classify

        risk = (manifest.get("privacy") or {}).get("risk") or {}
        prosecutor = risk.get("prosecutor") or {}
        for gauge, key in ((self.last_max_risk, "highest"), (self.last_avg_risk, "average"),
                           (self.last_at_risk, "records_at_risk")):
            if isinstance(prosecutor.get(key), int | float):
                gauge.labels(feed).set(prosecutor[key])
        kinds = [w["kind"] for w in classify(manifest)]
        self.last_warnings.labels(feed, "expected").set(kinds.count(EXPECTED))
        self.last_warnings.labels(feed, "unexpected").set(len(kinds) - kinds.count(EXPECTED))

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

    inputs = inputs or {settings.topic_reports: settings.feed}
    metrics.feeds(inputs.values())
    metrics.registry.register(_LagCollector(app, inputs))
    app.page("/metrics")(metrics_view)
    app.page("/ready")(ready_view)
    app.page("/live")(live_view)
