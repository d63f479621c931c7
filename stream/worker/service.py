"""The worker's logic, independent of faust's wiring: ingest a batch, tick windows, publish releases.

At-least-once with idempotence (the broker has no transactions, see DESIGN.md):

* a batch is validated, its rejects sent to the DLQ and its accepted reports written to the pending pool;
  only then may faust commit the offsets. A failing database write is retried, and if it keeps failing
  the process exits hard, never committing (faust acknowledges a batch whose handler raised);
* releases are stored in the ledger in one transaction before anything is published; records are
  published first, then the manifest; then the release is marked published. A stored but unpublished
  release (crash in between) is re-published as stored, on restart or once its publishing claim expires;
* window and publishing claims are leases (:mod:`db.claims`) renewed every ``CLAIM_LEASE_S / 3`` while the
  worker works on them (they expire only when it dies, hangs or loses the database)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from core.encoding import Schema
from db import Database, PoolRepository, ReleaseRepository
from stream.config.settings import Settings
from stream.intake.dead_letters import dead_letter
from stream.intake.guards import Limits
from stream.intake.validate import ReportValidator, screen_batch
from stream.ops.faults import crash_at, stop_at
from stream.ops.logs import ctx, release_ctx
from stream.wire.records import dumps, record_messages
from stream.wire.signing import sign_manifest
from stream.worker.batches import MarkerIntake, later, segments
from stream.worker.delay_hook import delay_tick
from stream.worker.heartbeat import Heartbeat
from stream.worker.leases import LeaseKeeper
from stream.worker.metrics import WorkerMetrics
from stream.worker.persist import persist
from stream.worker.pool import ReleasePool, ThreadReleases
from stream.worker.receipts import Receipts
from stream.worker.release import Orchestrator, window_policy
from stream.worker.throttle import FailureLog

log = logging.getLogger(__name__)

# send(topic, key, value) -> awaitable delivery future (faust's producer, or aiokafka in tests)
SendFn = Callable[[str, bytes | None, bytes], Awaitable[Awaitable[Any]]]
# send_many(topic, key, values): send all values in order under one key and wait until all are delivered
SendManyFn = Callable[[str, bytes | None, list[bytes]], Awaitable[None]]


def one_by_one(send: SendFn) -> SendManyFn:
    """A :data:`SendManyFn` made of single sends (used when the producer has no batch API)."""
    async def send_many(topic: str, key: bytes | None, values: list[bytes]) -> None:
        futs = [await send(topic, key, v) for v in values]
        await asyncio.gather(*futs)

    return send_many


def worker_id(settings: Settings) -> str:
    """``host:port``, and ``/<feed>`` for a feed other than ``default`` (one heartbeat row per feed served)."""
    base = f"{socket.gethostname()}:{settings.web_port}"
    return base if settings.feed == "default" else f"{base}/{settings.feed}"


class WorkerService:
    def __init__(self, settings: Settings, db: Database, schema: Schema, worker: str | None = None,
                 metrics: WorkerMetrics | None = None) -> None:
        """One feed's worker logic (``settings`` are the feed's, :mod:`stream.config.feeds`); ``metrics`` shared by
        the feeds of one worker process (:mod:`stream.worker.fleet`), else its own."""
        self.settings, self.db, self.schema = settings, db, schema
        self.send_many: SendManyFn | None = None  # the app sets a batching sender; else one send per record
        self.worker = worker or worker_id(settings)
        self.key = settings.key_bytes()
        persons = settings.person_columns if settings.privacy.link_guard != "off" else ()
        self.validator = ReportValidator(schema, persons, Limits.from_settings(settings))
        self.pool = PoolRepository(db, window_policy(settings), settings.station_check())
        self.markers = MarkerIntake(db, settings.feed, settings.window_key_for)
        self.repo = ReleaseRepository(db)
        pooled = settings.release_processes  # then the release processes run the engine, never this one
        self.orchestrator = Orchestrator(settings, db, schema, self.worker, keep_encoded=True, runs_engine=not pooled)
        self.releases: ReleasePool | ThreadReleases = (ReleasePool(settings, self.worker, settings.release_concurrency,
                                                                   schema.spec.dp)
                                                       if pooled else ThreadReleases(self.orchestrator))
        self.stats = {"ingested": 0, "rejected": 0, "duplicates": 0, "reused_ids": 0, "published": 0}
        self.metrics = metrics or WorkerMetrics(db, getattr(self.releases, "pids", None))
        self._release_s: dict[str, float] = {}  # release id -> seconds its release call took (metrics)
        self._tick_lock = asyncio.Lock()
        self._wake = asyncio.Event()  # set when a release slot frees up
        self._computing = 0  # of those, windows still sampling / anonymizing / verifying: the release slots
        self._tasks: set[asyncio.Future[None]] = set()
        self._warm_up: asyncio.Future[None] | None = None  # the engine's first run, on the first batch
        self._retry_at: dict[str, tuple[float, int]] = {}  # window -> (not before, failures) after a failure
        self.failures = FailureLog(log, on_failure=self.metrics.failure)
        self.leases = LeaseKeeper(self.repo, self.worker, settings.claim_lease_s, self.failures)
        self.heartbeat = Heartbeat(db, self.worker, self.stats, self.failures)
        self.receipts = Receipts(settings, self.worker, schema, self.failures)  # push receipts, the spec advert
        self._closing = self.leases.closing  # windows this worker is closing now (until published)

    # --- ingest ------------------------------------------------------------------------------------
    async def handle_batch(self, values: list[bytes | None], send: SendFn, headers: list[Any] | None = None) -> None:
        """Ingest a consumer batch in parts cut after each push's end marker (:func:`.batches.segments`)."""
        previous = None
        for part, part_headers in segments(values, headers):
            previous = later(datetime.now(UTC), previous)
            await self._ingest(part, send, part_headers, previous)

    async def _ingest(self, values: list[bytes | None], send: SendFn, headers: list[Any] | None,
                      now: datetime) -> None:
        """Validate a batch (off the event loop, which keeps fetching meanwhile), write the accepted reports
        to the pending pool, dead-letter the rejects, then send the push receipts (:mod:`.receipts`).

        No message can fail its batch: validation never raises (``internal-error`` is the last resort), dead
        letters are bounded in size, and the ledger refuses (rather than fails on) unknown stations, reused
        report ids and window floods. Dead letters are sent after the pool write; a crash in between
        redelivers the batch (at-least-once: a dead letter may be sent twice, a report is never lost).
        """
        s = self.settings
        headers = self.markers.report_headers(values, headers)  # batch markers are never reports: their headers
        values, ends, bad = await self.markers.before(values, now)  # go too (stream/wire/markers.py)
        batch = await asyncio.to_thread(screen_batch, self.validator, values, self.key, s.window_key_for,
                                        s.privacy.link_guard != "off", now, s.content_columns)
        accepted, dead = batch.accepted, batch.dead + bad.dead  # bad: malformed markers, dead-lettered too
        result = await persist(self.pool, self.failures, accepted, batch.rejections + bad.rejections, now)
        if accepted:  # a batch of markers alone puts nothing in the pool
            stop_at("stop-after-ingest", s.fault_point)
        for i, reason, message in result.refused:
            dead.append(dead_letter(batch.raws[i], reason, message, accepted[i].station_id, now))
        if dead:
            futs = [await send(s.topic_dlq, (d["station_id"] or "").encode() or None, dumps(d)) for d in dead]
            await asyncio.gather(*futs)
        await self.receipts.send(Receipts.origins(headers, len(values)), batch, result, send)
        if self._warm_up is None and len(accepted) >= 20 * max(s.privacy.k, 1):
            rows = [a.data for a in accepted[:50 * max(s.privacy.k, 1)]]  # identifier-free, in memory only
            self._warm_up = asyncio.ensure_future(self.releases.warm_up(rows))
        if result.may_be_due and self._computing < self.settings.release_concurrency:
            self._wake.set()  # a window filled up or opened: look for due windows now, not at the next tick
        if await self.markers.after(ends, now):
            self._wake.set()  # a batch is complete: its windows are due now
        self.metrics.batch(result.accepted, result.duplicates, result.corrections, (d["reason"] for d in dead))
        self.stats["ingested"] += result.accepted
        self.stats["rejected"] += result.rejected
        self.stats["duplicates"] += result.duplicates + result.corrections
        self.stats["reused_ids"] += sum(1 for _i, reason, _m in result.refused if reason == "report-id-reused")
        if dead:
            log.info("batch: %d accepted, %d rejected to the DLQ, %d duplicate(s)", result.accepted,
                     result.rejected, result.duplicates + result.corrections)

    async def record_partitions(self, partitions: list[int]) -> None:
        await self.heartbeat.assigned(partitions)

    # --- windows and releases ----------------------------------------------------------------------
    async def tick(self, send: SendFn) -> list[str]:
        """Start closing due windows, and publish stored releases left unpublished.

        A worker claims a due window only when it has a free release slot (``release_concurrency``),
        so workers share the windows that fall due together instead of one claiming them all. A
        claimed window is released in the background (in a release process, or a thread with
        ``release_processes`` off) and published as soon as it is stored; the tick does not wait
        for it, and a freed slot wakes the loop (:meth:`wait_tick`). A slot bounds the CPU-bound
        part only (sample, anonymize, verify): it is freed once the release is verified, so the
        next window is anonymized while the previous one is written to the ledger and published.
        Returns the releases re-published now.
        """
        if self._tick_lock.locked():
            return []
        self.leases.start()
        async with self._tick_lock:
            try:
                await self.receipts.advertise(send)
                await self.heartbeat.beat()
                await self._claim_due(send)
                done = await self.publish_pending(send)
            except Exception as exc:  # database or broker down: windows stay in the DB; logged once per interval
                self.failures.failed("window tick", exc, "window tick failed; retrying at the next tick")
                return []
            self.failures.recovered("window tick")
            return done

    async def _claim_due(self, send: SendFn) -> None:
        """Claim due windows while release slots are free and release each in the background."""
        free = self.settings.release_concurrency - self._computing
        if await delay_tick(self) or free <= 0:  # delay mode releases no windows (stream/worker/delay_hook.py)
            return
        for wid, why in await asyncio.to_thread(self.orchestrator.due, datetime.now(UTC)):
            if free <= 0:
                break
            if wid in self._closing or self._retry_at.get(wid, (0.0, 0))[0] > time.monotonic():
                continue
            t0 = time.perf_counter()
            window = await asyncio.to_thread(self.orchestrator.claim, wid, why, datetime.now(UTC))
            self.metrics.stage.labels("claim").observe(time.perf_counter() - t0)
            if window is None:
                continue
            crash_at("claim", self.settings.fault_point)
            free -= 1
            self._closing.add(wid)
            self._computing += 1
            task = asyncio.ensure_future(self._release_and_publish(window, send))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def wait_tick(self, interval: float) -> None:
        """Sleep until the next tick: ``interval`` seconds, or less when a release slot frees up."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout=interval)
        self._wake.clear()

    def close(self) -> None:
        """Stop the release processes (the fleet then hands back the windows they were releasing)."""
        self.leases.close()
        self.releases.close()

    async def drain(self) -> None:
        """Wait for the windows being closed and published now (tests; a stopping worker leaves them to
        be retried when their leases run out, which loses nothing)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _release_and_publish(self, window: Any, send: SendFn) -> None:
        loop = asyncio.get_running_loop()
        held = True

        def free_slot() -> None:  # on the event loop; at most once per window
            nonlocal held
            if held:
                held = False
                self._computing -= 1
                self._wake.set()

        def verified() -> None:  # in a release thread, or the pool's queue reader
            loop.call_soon_threadsafe(free_slot)

        try:
            t0 = time.perf_counter()
            rid, encoded = await self.releases.release(window, datetime.now(UTC), verified)
            if rid is not None:
                self._release_s[rid] = time.perf_counter() - t0
            if rid is not None and encoded is not None:
                self.orchestrator.hand_over(rid, encoded)
            if rid is None:
                return
            crash_at("after-ledger-write", self.settings.fault_point)
            self._retry_at.pop(window.id, None)
            await self.publish(rid, send)
        except Exception as exc:  # give the claim up: the window is retried at once (then with a back-off)
            _, failures = self._retry_at.get(window.id, (0.0, 0))
            delay = 0.0 if failures == 0 else min(2.0 ** failures, 60.0)
            self._retry_at[window.id] = (time.monotonic() + delay, failures + 1)
            what = f"closing window {window.id} failed; retrying in {delay:.0f}s"
            self.failures.failed("window release", exc, what, extra=ctx(None, window.id))
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.repo.give_up, window.id, self.worker, datetime.now(UTC))
        finally:
            free_slot()
            self.leases.done(window.id)  # cancelled (the worker stops): the window is handed back
            self._wake.set()

    async def publish_pending(self, send: SendFn) -> list[str]:
        """(Re-)publish stored releases this worker may publish, except those of windows it is closing now."""
        now = datetime.now(UTC)
        ids = await asyncio.to_thread(self.repo.claim_unpublished, self.worker, now, self.settings.claim_lease_s,
                                      frozenset(self._closing), self.settings.feed)
        done = []
        for rid in ids:
            await self.publish(rid, send)
            done.append(rid)
        return done

    async def publish(self, release_id: str, send: SendFn) -> None:
        """Publish a stored release: its records in order, then its manifest; then mark it published.

        The messages are the stored release's, encoded off the event loop; a release stored by this
        process moments ago hands over the bytes it already encoded for its checksum.
        """
        s, started = self.settings, time.perf_counter()
        self.leases.publishing.add(release_id)
        try:
            manifest, records = await asyncio.to_thread(self._encoded, release_id)
            key = release_id.encode()
            await (self.send_many or one_by_one(send))(s.topic_anonymized, key, records)
            crash_at("mid-publish", s.fault_point)
            await (await send(s.topic_releases, key, manifest))
            timings = await asyncio.to_thread(self.repo.mark_published, release_id, self.worker, datetime.now(UTC))
        finally:
            self.leases.publishing.discard(release_id)
        self.stats["published"] += 1
        self.metrics.released(manifest, self._release_s.pop(release_id, None), time.perf_counter() - started,
                              timings, s.feed)
        log.info("release %s published: %d records, then its manifest (%.2fs)", release_id, len(records),
                 time.perf_counter() - started, extra=release_ctx(release_id, manifest))

    def _encoded(self, release_id: str) -> tuple[bytes, list[bytes]]:
        fresh = self.orchestrator.take_encoded(release_id)
        if fresh is not None:
            return fresh
        manifest, columns, rows = self.repo.load(release_id)
        if "signature" not in manifest:  # stored before manifests were signed
            manifest = sign_manifest(manifest, self.orchestrator.signer)
        return dumps(manifest), [dumps(m) for m in record_messages(release_id, columns, rows)]
