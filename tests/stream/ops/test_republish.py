"""Re-publishing after the broker lost its topics converges: a broker error is one line and exit 3, and a
re-publish that stopped half-way resumes without sending a record twice."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stream.ops.kafka_clients import open_client
from stream.ops.runtime import spawn_worker, stop_process, wait_until


class _Refused:
    """A producer future the broker failed (what kafka-python hands back for a recreated topic)."""

    def get(self, timeout: float | None = None) -> None:
        from kafka.errors import UnknownError

        raise UnknownError("the request failed on the broker")


class _Producer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []

    def send(self, topic: str, key: bytes, value: bytes) -> Any:
        self.sent.append((topic, key))
        return _Refused()

    def flush(self) -> None:
        pass


def _seeded(root: Path) -> Any:
    from sqlalchemy import update

    from db.models import Release
    from tests.stream.console.seed import build

    seeded = build(f"sqlite:///{root / 'ledger.db'}", root, pbg=False)
    with seeded.db.unit() as s:  # published once; then the broker lost its topics
        s.execute(update(Release).values(state="published", published_at=datetime.now(UTC)))
    return seeded


def test_a_broker_error_is_one_line_and_exit_3_and_no_manifest_follows(tmp_path: Path) -> None:
    from db import ReleaseRepository
    from stream.cli.main import main
    from stream.ops.republish import RepublishFailed, publish_from_ledger

    seeded = _seeded(tmp_path)
    rid = seeded.releases["S1"]
    producer = _Producer()
    with pytest.raises(RepublishFailed) as err:
        publish_from_ledger(seeded.settings, ReleaseRepository(seeded.db), [rid], producer=producer)
    assert "\n" not in err.value.message and "UnknownError" in err.value.message and rid in err.value.message
    assert err.value.reason == "service-unreachable"  # main() turns it into `error: …` and exit 3
    assert {t for t, _ in producer.sent} == {seeded.settings.topic_anonymized}  # the manifest was never sent
    from kafka.errors import UnknownError

    from stream.ops.locate import unreachable_message

    line = unreachable_message(UnknownError("x"))
    assert line is not None and line.startswith("the broker failed the request (UnknownError") and "\n" not in line
    assert main(["releases", "republish", rid, "--database", seeded.settings.db_url(),
                 "--broker", "kafka://127.0.0.1:1"]) == 3
    seeded.db.dispose()


def test_republish_command_prints_one_line_and_exits_3_on_a_broker_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The broker answers, then fails the re-publish (UnknownError on a recreated topic): one line, exit 3."""
    import stream.ops.kafka_clients
    import stream.ops.locate
    import stream.ops.republish
    from stream.cli.main import main

    seeded = _seeded(tmp_path)
    rid = seeded.releases["S2"]
    monkeypatch.setattr(stream.ops.locate, "check_broker", lambda settings: None)
    monkeypatch.setattr(stream.ops.republish, "topic_seqs", lambda *a, **k: {rid: {0, 1, 2}})
    producer = _Producer()
    monkeypatch.setattr(stream.ops.kafka_clients, "make_producer", lambda *a, **k: producer)
    capsys.readouterr()
    assert main(["releases", "republish", rid, "--database", seeded.settings.db_url(),
                 "--broker", "kafka://127.0.0.1:9"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: the broker failed while release {rid} was re-published")
    assert "UnknownError" in err and "Traceback" not in err and "resumes where this one stopped" in err
    assert len(producer.sent) == 117  # the 3 records already on the topic were not sent again (120 in all)
    seeded.db.dispose()


def _read(bootstrap: list[str], topic: str) -> list[tuple[str, dict[str, Any]]]:
    """Every message on ``topic``, read to the end offsets it has now (not until some seconds of silence)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = open_client(KafkaConsumer, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest",
                           enable_auto_commit=False, request_timeout_ms=15_000)
    try:
        parts = consumer.partitions_for_topic(topic)
        if not parts:  # not created yet: nothing on it
            return []
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        out: list[tuple[str, dict[str, Any]]] = []
        idle = 0
        while any(consumer.position(tp) < end[tp] for tp in tps):
            batch = consumer.poll(timeout_ms=500)
            idle = 0 if batch else idle + 1
            if idle >= 6:  # tansu may report an end offset past the last record (as stream/ops/republish.py)
                break
            out += [(m.key.decode(), json.loads(m.value)) for msgs in batch.values() for m in msgs]
        return out
    finally:
        consumer.close()


def _complete(settings: Any, release_ids: set[str], log: Path) -> list[tuple[str, int]]:
    """Every release complete on the topics (records = the manifest's count) and no record twice."""
    manifests = {k: m for k, m in _read(settings.bootstrap_servers(), settings.topic_releases)}
    assert set(manifests) == release_ids, log.read_text()[-3000:]
    records = _read(settings.bootstrap_servers(), settings.topic_anonymized)
    seen = [(m["release_id"], m["seq"]) for _k, m in records]
    assert len(seen) == len(set(seen)), "duplicate records on the topic"
    for rid, m in manifests.items():
        assert sum(1 for r, _ in seen if r == rid) == m["records"], rid
    return seen


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_restarts_against_a_broker_that_lost_its_topics_converge_without_duplicates(tmp_path: Path) -> None:
    from stream.ops.broker import EmbeddedBroker
    from stream.testing.services import start_broker

    seeded = _seeded(tmp_path)
    broker = start_broker()  # its own, empty: the ledger's published releases are all missing from it
    settings = seeded.settings.with_updates(broker_url=broker.url, web_port=0)
    procs = []
    try:
        # first start: killed half-way through re-publishing (records sent, no manifest)
        crash = spawn_worker(settings.with_updates(fault_point="mid-republish"), tmp_path / "run-1.log")
        procs.append(crash)
        crash.wait(timeout=300)
        assert crash.returncode != 0, (tmp_path / "run-1.log").read_text()[-2000:]
        half = _read(settings.bootstrap_servers(), settings.topic_anonymized)
        assert half and not _read(settings.bootstrap_servers(), settings.topic_releases)
        # restart until every release is back
        for attempt in range(2, 5):
            worker = spawn_worker(settings, tmp_path / f"run-{attempt}.log")
            procs.append(worker)
            def back(w: Any = worker) -> bool:
                keys = {k for k, _ in _read(settings.bootstrap_servers(), settings.topic_releases)}
                return len(keys) == len(seeded.releases) or w.poll() is not None

            done = wait_until(back, timeout=240, interval=0.5)
            stop_process(worker)
            if done and worker.returncode in (0, -15, None):
                break
        seen = _complete(settings, set(seeded.releases.values()), tmp_path / "run-2.log")
        print(f"{len(half)} records before the crash; {len(seen)} records, 0 duplicates, "
              f"{len(seeded.releases)} manifests after {len(procs)} start(s)")
        # the broker restarts with fresh storage (same address): the next start puts everything back again
        port = broker.port
        broker.stop()
        broker = EmbeddedBroker(port=port).start()
        worker = spawn_worker(settings, tmp_path / "run-again.log")
        procs.append(worker)
        assert wait_until(lambda: len({k for k, _ in _read(settings.bootstrap_servers(), settings.topic_releases)})
                          == len(seeded.releases), timeout=240, interval=0.5), (tmp_path / "run-again.log").read_text()
        stop_process(worker)
        seen = _complete(settings, set(seeded.releases.values()), tmp_path / "run-again.log")
        print(f"after a broker restart with fresh storage: {len(seen)} records, 0 duplicates")
    finally:
        for p in procs:
            stop_process(p)
        broker.stop()
        seeded.db.dispose()
