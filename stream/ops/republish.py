"""Releases from the ledger back onto the topics: at start-up, on demand, or to a file.

The embedded broker keeps its topics in memory, and any broker may lose a topic. The ledger holds
every stored release (manifest, columns, rows), so nothing is lost: at start-up ``anonstream run``
compares the releases marked ``published`` with the manifests on the releases topic and publishes
again, records first, then the manifest, every release the broker lacks
(:func:`republish_missing`). ``anonstream releases republish ID`` does it for one release and
``anonstream releases export ID --out FILE`` writes a release's messages as JSON lines.

Re-publishing is at-least-once like every publication: a consumer may see a release twice and
keeps it once by its release id.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from db import Database, ReleaseRepository
from db.models import Release
from stream.config.settings import Settings
from stream.ops.kafka_clients import open_client
from stream.ops.logs import ctx
from stream.wire.records import dumps, record_messages

log = logging.getLogger(__name__)


def encoded(repo: ReleaseRepository, release_id: str) -> tuple[bytes, list[bytes]]:
    """A stored release's manifest and record messages, encoded as the worker publishes them."""
    manifest, columns, rows = repo.load(release_id)
    return dumps(manifest), [dumps(m) for m in record_messages(release_id, columns, rows)]


def published_ids(db: Database, feed: str | None = None) -> list[str]:
    """Published releases (of ``feed``'s windows, or of every feed), oldest first."""
    from sqlalchemy import select

    from db.models import Window

    stmt = select(Release.id).where(Release.state == "published")
    if feed is not None:
        stmt = stmt.where(Release.window_id.in_(select(Window.id).where(Window.feed == feed)))
    with db.read() as s:
        return list(s.execute(stmt.order_by(Release.created_at)).scalars())


def topic_keys(bootstrap: list[str], topic: str, timeout_s: float = 30.0) -> set[str] | None:
    """Keys of every message on ``topic`` (read to its end without a consumer group); None if the
    topic does not exist or could not be read to its end within ``timeout_s``."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = open_client(KafkaConsumer, bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             client_id="anonstream-republish", request_timeout_ms=15_000,
                             consumer_timeout_ms=1000)
    try:
        parts = consumer.partitions_for_topic(topic)
        if not parts:
            return None
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        keys: set[str] = set()
        deadline, idle = time.monotonic() + timeout_s, 0
        while any(consumer.position(tp) < end[tp] for tp in tps):
            if time.monotonic() > deadline:
                return None
            batch = consumer.poll(timeout_ms=500)
            idle = 0 if batch else idle + 1
            if idle >= 6:  # tansu may report an end offset past the last record (DESIGN.md)
                break
            for records in batch.values():
                keys.update(r.key.decode("utf-8", "replace") for r in records if r.key is not None)
        return keys
    finally:
        consumer.close()


def publish_from_ledger(settings: Settings, repo: ReleaseRepository, release_ids: list[str],
                        producer: Any | None = None) -> int:
    """Publish each release's records, then its manifest, from the ledger; returns how many."""
    from stream.station.producer import make_producer

    own = producer is None
    producer = producer or make_producer(settings.bootstrap_servers(), client_id="anonstream-republish",
                                         max_request_size=16 * 1024 * 1024)
    try:
        for rid in release_ids:
            manifest, records = encoded(repo, rid)
            key = rid.encode()
            for value in records:
                producer.send(settings.topic_anonymized, key=key, value=value)
            producer.flush()
            producer.send(settings.topic_releases, key=key, value=manifest).get(timeout=30)
            log.info("release re-published from the ledger: %d records, then its manifest", len(records),
                     extra=ctx(release_id=rid))
    finally:
        if own:
            producer.close()
    return len(release_ids)


def republish_missing(settings: Settings, db: Database | None = None) -> list[str]:
    """Re-publish every ``published`` release of the settings' feed whose manifest the feed's releases
    topic lacks (start-up; called once per feed)."""
    db = db or Database(settings.db_url())
    ids = published_ids(db, settings.feed)
    if not ids:
        return []
    keys = topic_keys(settings.bootstrap_servers(), settings.topic_releases)
    if keys is None:
        log.warning("could not read %s to its end; releases are not re-published now", settings.topic_releases)
        return []
    missing = [rid for rid in ids if rid not in keys]
    if missing:
        log.warning("the broker lacks %d of %d published release(s) (restarted without its data?); "
                    "re-publishing them from the ledger", len(missing), len(ids))
        publish_from_ledger(settings, ReleaseRepository(db), missing)
    return missing


def export(repo: ReleaseRepository, release_id: str, out: Path) -> int:
    """Write the release's messages as JSON lines: its records in order, then its manifest."""
    manifest, records = encoded(repo, release_id)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as fh:
        for value in records:
            fh.write(value + b"\n")
        fh.write(manifest + b"\n")
    return len(records)
