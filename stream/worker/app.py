"""The faust app: one agent per feed ingesting its reports topic (``crime.reports``) in batches, one
timer closing every feed's windows (:mod:`stream.worker.fleet`).

Settings that matter on the measured stack (DESIGN.md): session timeout 6 s / heartbeat 2 s (tansu
answers a group join after half the session timeout), agent concurrency 1 (faust may commit past an
in-flight message with more), ``noack_take()`` batches with manual acknowledgement after the pending
pool write (faust's per-event overhead is the ceiling, and a batch is written while the next one is
buffered), raw
serializers (malformed JSON must reach our validator and the DLQ, not crash deserialization), and
no faust tables (the database is the source of truth).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import faust

from db import Database
from stream.config.settings import Settings
from stream.worker.fleet import Fleet
from stream.worker.service import SendFn, WorkerService

log = logging.getLogger(__name__)


def create_app(settings: Settings, db: Database | None = None) -> tuple[faust.App, WorkerService]:
    """The faust app of one worker; returns it with the first feed's service (the only one without a
    pipelines file; ``app.anonstream_fleet`` holds every feed's, :mod:`stream.worker.fleet`)."""
    db = db or Database(settings.db_url())
    fleet = Fleet(settings, db)
    service = next(iter(fleet.services.values()))
    settings.data_dir.mkdir(parents=True, exist_ok=True)  # faust creates its datadir, not the home above it
    app = faust.App(
        settings.app_id,
        broker=settings.faust_broker(),
        store="memory://",
        datadir=str(settings.data_dir / "faust"),
        autodiscover=False,
        broker_session_timeout=settings.session_timeout_s,
        broker_heartbeat_interval=settings.heartbeat_interval_s,
        broker_commit_interval=1.0,
        consumer_auto_offset_reset="earliest",
        topic_partitions=settings.reports_partitions,
        topic_allow_declare=False,
        web_host=settings.web_host,
        web_bind=settings.web_host,
        web_port=settings.web_port,
        producer_acks=-1,
        stream_wait_empty=False,
    )
    async def send(topic: str, key: bytes | None, value: bytes) -> Any:
        return await app.producer.send(topic, key, value, None, None, None)

    sender: SendFn = send

    async def send_many(topic: str, key: bytes | None, values: list[bytes]) -> None:
        # A release's records share its key, so one partition: the first record is sent alone to learn
        # it, the rest go in record batches through aiokafka's public batch API (several times faster
        # than faust's per-message send, which dominated publishing a 10,000-record release).
        if not values:
            return
        producer = app.producer._ensure_producer()  # type: ignore[attr-defined]  # the aiokafka producer behind faust's
        first = await (await producer.send(topic, values[0], key=key))
        pending, batch = [], producer.create_batch()
        for value in values[1:]:
            if batch.append(key=key, value=value, timestamp=None) is None:  # full: ship it
                pending.append(await producer.send_batch(batch, topic, partition=first.partition))
                batch = producer.create_batch()
                batch.append(key=key, value=value, timestamp=None)
        if batch.record_count():
            pending.append(await producer.send_batch(batch, topic, partition=first.partition))
        await asyncio.gather(*pending)

    def ingest_agent(feed: WorkerService) -> None:
        """The agent ingesting one feed's input topic (``ingest``; ``ingest-<feed>`` for other feeds)."""
        fs = feed.settings
        reports = app.topic(fs.topic_reports, key_type=bytes, value_type=bytes, key_serializer="raw",
                            value_serializer="raw", partitions=fs.reports_partitions, internal=False)
        name = "ingest" if fs.feed == "default" else f"ingest-{fs.feed}"

        async def ingest(stream: Any) -> None:
            # Batches are persisted one at a time, in order, while the next batch is being buffered;
            # a batch's events are acknowledged (so their offsets may be committed) only after its
            # reports are in the pending pool.
            inflight: asyncio.Future[None] | None = None

            async def persist(events: list[Any]) -> None:
                try:
                    await feed.handle_batch([e.value for e in events], sender, [e.headers for e in events])
                except asyncio.CancelledError:  # the worker is stopping: the batch is not acknowledged either
                    log.warning("stopping while a batch of %d report(s) was being written: not committed, it is "
                                "read again on restart (nothing is lost or counted twice)", len(events))
                    raise
                except BaseException as exc:  # never acknowledge an unpersisted batch
                    log.critical("ingest failed (%s); exiting without committing offsets", type(exc).__name__)
                    os._exit(75)
                for event in events:
                    await stream.ack(event)

            async for events in stream.noack_take(fs.take_max, within=fs.take_within_s):
                batch = list(events)
                if inflight is not None:
                    await inflight
                inflight = asyncio.ensure_future(persist(batch))
            if inflight is not None:
                await inflight

        app.agent(reports, concurrency=1, name=name)(ingest)

    for feed_service in fleet.services.values():
        ingest_agent(feed_service)

    @app.task  # type: ignore[untyped-decorator]  # faust's decorators carry no types
    async def windows() -> None:
        # our own loop rather than app.timer: a tick that releases a large window takes longer than
        # the interval, which is expected here and not worth faust's "timer is overlapping" warning
        await fleet.start_releases()  # the fork server loads the engine now, not while the first batch is ingested
        while not app.should_stop:
            await fleet.wait_tick(settings.tick_interval_s)
            try:
                await fleet.tick(sender)
            except Exception:  # a failing tick must not stop the worker; windows stay in the DB
                log.exception("window tick failed; retrying at the next tick")

    @app.on_partitions_assigned.connect  # type: ignore[arg-type]  # faust's signal type wants a keyword it passes
    async def on_assigned(app: Any, assigned: Any, **_kw: Any) -> None:
        await fleet.record_partitions(assigned)

    if hasattr(app.producer, "_ensure_producer"):  # the aiokafka transport (kafka:// brokers)
        fleet.set_send_many(send_many)
    app.anonstream_service = service  # type: ignore[attr-defined]
    app.anonstream_fleet = fleet  # type: ignore[attr-defined]
    from stream.worker.metrics import install

    install(app, settings, fleet.metrics, fleet.inputs)  # /metrics, /ready, /live on the web port
    return app, service


def run_worker(settings: Settings) -> int:
    """Run one faust worker in this process until it is stopped (SIGTERM / SIGINT)."""
    from faust.worker import Worker

    app, _service = create_app(settings)
    # logging is set up once by the CLI (stream/ops/logs.py): one format, the Kafka clients at WARNING
    worker = Worker(app, loglevel=settings.log_level, quiet=True, redirect_stdouts=False, override_logging=False)
    if not worker.stdout.isatty():  # faust's start-up spinner writes "\b\033[?25h" even into a log file
        worker.spinner = None
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        code = int(exc.code or 0)
        if code:  # faust stops with 1 on any start-up failure: a broker gone meanwhile is exit 3 (one line)
            from stream.ops.locate import check_broker

            check_broker(settings, timeout=2.0)  # raises ServiceUnreachable (exit 3) if the broker is gone
        return code
    finally:
        app.anonstream_fleet.close()  # type: ignore[attr-defined]
    return 0
