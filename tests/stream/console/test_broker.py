"""Re-verification from the output topic and consumer lag, against the real bundled broker (tansu)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Iterator
from typing import Any

import pytest

from stream.config.settings import Settings
from stream.ops.kafka_clients import open_client
from tests.stream.console.conftest import Console
from tests.stream.console.seed import Seeded

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def live(seeded: Seeded) -> Iterator[tuple[Settings, Console]]:
    """Settings pointing at the bundled broker with topics unique to this module, and a console on them."""
    from stream.ops.broker import ensure_topics, topic_partitions
    from stream.testing.services import broker

    b = broker()
    tag = uuid.uuid4().hex[:8]
    settings = seeded.settings.with_updates(
        broker_url=b.url, app_id=f"console-{tag}", topic_reports=f"c{tag}.reports", topic_dlq=f"c{tag}.dlq",
        topic_anonymized=f"c{tag}.anonymized", topic_releases=f"c{tag}.releases", reports_partitions=2)
    ensure_topics(settings.bootstrap_servers(), topic_partitions(settings))
    c = Console(settings, seeded.db, broker_timeout_s=15.0)
    yield settings, c
    c.close()


def _publish(settings: Settings, seeded: Seeded, release_id: str) -> None:
    """Publish a stored release with the worker's own publishing code (kafka-python as the producer)."""
    from kafka import KafkaProducer

    from stream.io.specs import load_schema
    from stream.worker.service import WorkerService

    producer = open_client(KafkaProducer, bootstrap_servers=settings.bootstrap_servers(), acks="all", linger_ms=5)
    service = WorkerService(settings, seeded.db, load_schema(settings.spec), worker="console-test")

    async def send(topic: str, key: bytes | None, value: bytes) -> Awaitable[Any]:
        fut = producer.send(topic, key=key, value=value)
        return asyncio.to_thread(fut.get, 20)

    try:
        asyncio.run(service.publish(release_id, send))
    finally:
        producer.close()


def test_reverify_published_release(live: tuple[Settings, Console], seeded: Seeded, token: str) -> None:
    settings, c = live
    rid = seeded.releases["S1"]
    _publish(settings, seeded, rid)
    status, _h, body = c.call("POST", f"/api/releases/{rid}/verify", token=token)
    assert status == 200, body
    res = json.loads(body)
    detail = c.get_json(f"/api/releases/{rid}")
    assert res["ok"] is True, res["failures"]
    assert res["records_found"] == res["records_expected"] == detail["released"]
    assert res["duplicates"] == 0 and res["checksum_ok"] is True
    assert res["k"] == detail["k"] and res["l_distinct"] == detail["l"]
    assert detail["state"] == "published"

    _publish(settings, seeded, rid)  # at-least-once: a second copy on the topic is deduplicated
    res = json.loads(c.call("POST", f"/api/releases/{rid}/verify", token=token)[2])
    assert res["ok"] is True and res["duplicates"] == detail["released"]
    audit = [a for a in c.get_json("/api/audit?limit=1000")["audit"]
             if a["action"] == "release-reverified" and a["subject"] == rid]
    assert len(audit) == 2 and all(a["detail"]["ok"] for a in audit)


def test_reverify_detects_missing_and_tampered_records(live: tuple[Settings, Console], seeded: Seeded,
                                                       token: str) -> None:
    from kafka import KafkaProducer

    from db import ReleaseRepository
    from stream.wire.records import dumps, record_messages

    settings, c = live
    res = json.loads(c.call("POST", f"/api/releases/{seeded.releases['S2']}/verify", token=token)[2])
    assert res["ok"] is False and res["records_found"] == 0  # never published

    rid = seeded.releases["S3"]
    _manifest, columns, rows = ReleaseRepository(seeded.db).load(rid)
    msgs = record_messages(rid, columns, rows)
    msgs[0]["values"]["age"] = "[0-120]-tampered"  # a record moved into a class of its own
    producer = open_client(KafkaProducer, bootstrap_servers=settings.bootstrap_servers(), acks="all")
    for m in msgs:
        producer.send(settings.topic_anonymized, key=rid.encode(), value=dumps(m))
    producer.flush()
    producer.close()
    res = json.loads(c.call("POST", f"/api/releases/{rid}/verify", token=token)[2])
    assert res["ok"] is False and res["checksum_ok"] is False and res["k"] == 1
    assert any("below the required k" in f for f in res["failures"])


def test_consumer_lag_and_cli(live: tuple[Settings, Console], seeded: Seeded,
                              capsys: pytest.CaptureFixture[str]) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from stream.cli.main import main

    settings, c = live
    producer = open_client(KafkaProducer, bootstrap_servers=settings.bootstrap_servers(), acks="all")
    for i in range(10):  # one record per batch: tansu's latest offset is wrong after multi-record batches
        producer.send(settings.topic_reports, key=b"x", value=b"{}", partition=i % 2)
        producer.flush()
    producer.close()
    tp0 = TopicPartition(settings.topic_reports, 0)
    consumer = open_client(KafkaConsumer, bootstrap_servers=settings.bootstrap_servers(), group_id=settings.app_id,
                           enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=2000)
    consumer.assign([tp0])
    consumer.commit({tp0: OffsetAndMetadata(3, "", -1)})
    consumer.close()
    health = c.get_json("/api/health")
    group = health["worker"]["group"]
    assert "error" not in group and group["members"] == 0, group  # offsets committed, nobody joined
    lag = health["lag"]
    assert lag["error"] is None, lag
    parts = {p["partition"]: p for p in lag["partitions"]}
    assert parts[0] == {"partition": 0, "end": 5, "committed": 3, "lag": 2}
    assert parts[1]["committed"] is None and parts[1]["lag"] == 5
    assert lag["total"] == 7

    rid = seeded.releases["S1"]
    assert settings.broker_url is not None
    argv = ["--database", settings.db_url(), "--broker", settings.broker_url]
    env_topic = {"ANONSTREAM_TOPIC_ANONYMIZED": settings.topic_anonymized, "ANONSTREAM_APP_ID": settings.app_id,
                 "ANONSTREAM_TOPIC_REPORTS": settings.topic_reports}
    mp = pytest.MonkeyPatch()
    for k, v in env_topic.items():
        mp.setenv(k, v)
    try:
        assert main(["releases", "verify", rid, *argv]) == 0
        assert f"release {rid}: OK" in capsys.readouterr().out
        assert main(["status", *argv]) == 5  # the broker answers and no worker ever wrote a heartbeat: act
        out = capsys.readouterr().out
        assert out.startswith("ACTION NEEDED: no worker running (no worker has ever written a heartbeat")
        assert f"lag       7 on {settings.topic_reports}" in out
        assert main(["releases", "verify", seeded.releases["S2"], *argv]) == 1
    finally:
        mp.undo()
