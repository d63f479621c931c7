"""Releases from the ledger back onto the topics: at start-up, on demand, or to a file.

The embedded broker keeps its topics in memory, and any broker may lose a topic. The ledger holds
every stored release (manifest, columns, rows), so nothing is lost: at start-up ``anonstream run``
compares the releases marked ``published`` with the manifests on the releases topic and publishes
again, records first, then the manifest, every release the broker lacks
(:func:`republish_missing`). ``anonstream releases republish ID`` does it for one release and
``anonstream releases export ID --out FILE`` writes a release's messages as JSON lines.

A re-publish sends only the records the records topic lacks (by ``seq``), then the manifest, so one that
stopped half-way (a broker error: one line, exit 3; or a crash) resumes on the next start without
duplicating a record. A consumer may still see a manifest twice and keeps it once by its release id.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from db import Database, ReleaseRepository
from db.models import Release
from stream.config.settings import Settings
from stream.ops.kafka_clients import open_client
from stream.ops.locate import ServiceUnreachable
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


class RepublishFailed(ServiceUnreachable):
    """The broker failed while releases were re-published (one line, exit 3; the next start resumes)."""


def _read_topic(bootstrap: list[str], topic: str, timeout_s: float, each: Callable[[Any], None]) -> bool:
    """Call ``each`` on every message of ``topic`` (read to its end without a consumer group); False if the
    topic does not exist or could not be read to its end within ``timeout_s``."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = open_client(KafkaConsumer, bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                           client_id="anonstream-republish", request_timeout_ms=15_000, consumer_timeout_ms=1000)
    try:
        parts = consumer.partitions_for_topic(topic)
        if not parts:
            return False
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        deadline, idle = time.monotonic() + timeout_s, 0
        while any(consumer.position(tp) < end[tp] for tp in tps):
            if time.monotonic() > deadline:
                return False
            batch = consumer.poll(timeout_ms=500)
            idle = 0 if batch else idle + 1
            if idle >= 6:  # tansu may report an end offset past the last record (DESIGN.md)
                break
            for records in batch.values():
                for r in records:
                    each(r)
        return True
    finally:
        consumer.close()


def topic_keys(bootstrap: list[str], topic: str, timeout_s: float = 30.0) -> set[str] | None:
    """Keys of every message on ``topic``; None if it does not exist or could not be read to its end."""
    keys: set[str] = set()
    ok = _read_topic(bootstrap, topic, timeout_s,
                     lambda r: keys.add(r.key.decode("utf-8", "replace")) if r.key is not None else None)
    return keys if ok else None


def topic_seqs(bootstrap: list[str], topic: str, release_ids: set[str], timeout_s: float = 60.0
               ) -> dict[str, set[int]] | None:
    """The ``seq`` numbers of ``release_ids``' records already on the records topic (what a re-publish
    that stopped half-way left there); None if the topic could not be read to its end."""
    wanted = {rid.encode() for rid in release_ids}
    seqs: dict[str, set[int]] = {}

    def each(r: Any) -> None:
        if r.key in wanted:
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                msg = json.loads(r.value)
                seqs.setdefault(r.key.decode(), set()).add(int(msg["seq"]))

    return seqs if _read_topic(bootstrap, topic, timeout_s, each) else None


def publish_from_ledger(settings: Settings, repo: ReleaseRepository, release_ids: list[str],
                        producer: Any | None = None, present: dict[str, set[int]] | None = None) -> int:
    """Publish each release's records, then its manifest, from the ledger; returns how many records were sent.

    ``present``: per release, the ``seq`` numbers already on the records topic; those are not sent again,
    so a re-publish that stopped half-way resumes without duplicates. A broker error raises
    :class:`RepublishFailed` (one line, exit 3)."""
    from kafka.errors import KafkaError

    from stream.ops.faults import crash_at
    from stream.ops.kafka_clients import make_producer

    own = producer is None
    sent = 0
    rid = release_ids[0] if release_ids else ""
    try:
        producer = producer or make_producer(settings.bootstrap_servers(), client_id="anonstream-republish",
                                             max_request_size=16 * 1024 * 1024)
        for rid in release_ids:
            manifest, records = encoded(repo, rid)
            key, have = rid.encode(), (present or {}).get(rid, set())
            todo = [(seq, value) for seq, value in enumerate(records) if seq not in have]
            futures = []
            for i, (_seq, value) in enumerate(todo):
                futures.append(producer.send(settings.topic_anonymized, key=key, value=value))
                if i == len(todo) // 2:
                    producer.flush()
                    crash_at("mid-republish", settings.fault_point)  # half of the records sent, no manifest
            producer.flush()
            for fut in futures:  # a record the broker refused fails here, before its manifest is sent
                fut.get(timeout=30)
            sent += len(todo)
            producer.send(settings.topic_releases, key=key, value=manifest).get(timeout=30)
            log.info("release re-published from the ledger: %d of its %d records (the others were on the topic), "
                     "then its manifest", len(todo), len(records), extra=ctx(release_id=rid))
    except KafkaError as exc:
        detail = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ""
        raise RepublishFailed(
            f"the broker failed while release {rid} was re-published to {settings.topic_anonymized} "
            f"({type(exc).__name__}{': ' + detail if detail else ''}); nothing is lost: the next start (or "
            f"`anonstream releases republish {rid}`) resumes where this one stopped") from None
    finally:
        if own and producer is not None:
            with contextlib.suppress(Exception):
                producer.close()
    return sent


def republish_missing(settings: Settings, db: Database | None = None) -> list[str]:
    """Re-publish every ``published`` release of the settings' feed whose manifest the feed's releases
    topic lacks (start-up; called once per feed), sending only the records the records topic lacks."""
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
        present = topic_seqs(settings.bootstrap_servers(), settings.topic_anonymized, set(missing))
        if present is None:
            log.warning("could not read %s to its end; releases are not re-published now", settings.topic_anonymized)
            return []
        log.warning("the broker lacks %d of %d published release(s) (restarted without its data?); "
                    "re-publishing them from the ledger", len(missing), len(ids))
        publish_from_ledger(settings, ReleaseRepository(db), missing, present=present)
    return missing


def export(repo: ReleaseRepository, release_id: str, out: Path) -> int:
    """Write the release's messages as JSON lines: its records in order, then its manifest (the file
    replaced whole, :func:`stream.io.atomic.atomic_writer`)."""
    from stream.io.atomic import atomic_writer

    manifest, records = encoded(repo, release_id)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(out, "wb", option="--out") as fh:
        for value in records:
            fh.write(value + b"\n")
        fh.write(manifest + b"\n")
    return len(records)
