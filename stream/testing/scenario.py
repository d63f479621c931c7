"""A test scenario: its own topics, consumer group and PostgreSQL database on the shared broker/server."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from db import Database, ReleaseRepository
from stream.analyst.consumer import ReleaseAssembler, make_consumer
from stream.config.settings import Settings
from stream.ops.broker import EmbeddedBroker, ensure_topics, free_port, topic_partitions
from stream.ops.kafka_clients import make_producer
from stream.ops.runtime import migrate, spawn_worker, stop_process
from stream.testing.reports import spec_ref
from stream.testing.services import PostgresServer
from stream.wire.markers import Marker

ACCOUNTED = ("released", "suppressed", "blocked", "dlq", "duplicate", "correction", "pending")


class Scenario:
    def __init__(self, kafka: EmbeddedBroker, pg: PostgresServer, workdir: Path, **overrides: Any) -> None:
        tag = uuid.uuid4().hex[:8]
        values: dict[str, Any] = {
            "broker_url": kafka.url, "database_url": pg.create_database("s"), "data_dir": workdir,
            "spec": spec_ref(), "app_id": f"anonstream-{tag}", "topic_reports": f"t{tag}.crime.reports",
            "topic_dlq": f"t{tag}.crime.reports.dlq", "topic_anonymized": f"t{tag}.crime.anonymized",
            "topic_releases": f"t{tag}.crime.releases", "reports_partitions": 4, "idle_timeout_s": 2.0,
            "tick_interval_s": 0.5, "fingerprint_key": "test-fingerprint-key",
            "take_within_s": 0.3, "log_level": "info"}
        values.update(overrides)
        self.settings = Settings(**values)
        self.workdir = workdir
        ensure_topics(self.settings.bootstrap_servers(), topic_partitions(self.settings))
        migrate(self.settings)
        self.db = Database(self.settings.db_url())
        self.repo = ReleaseRepository(self.db)
        self.workers: list[subprocess.Popen[bytes]] = []
        self.pushed = 0

    def start_worker(self, **settings: Any) -> subprocess.Popen[bytes]:
        s = self.settings.with_updates(web_port=free_port(), **settings)
        proc = spawn_worker(s, self.workdir / f"worker-{len(self.workers)}.log")
        self.workers.append(proc)
        return proc

    def push(self, reports: dict[str, list[dict[str, Any]]], extra: list[tuple[str, bytes]] = (),  # type: ignore[assignment]
             batch: str | None = None) -> int:
        """Send each station's reports keyed by the station, then ``extra`` (key, raw value) as they are.
        With ``batch``, each station's reports are framed by begin and end markers of that push id, as
        ``anonstream push`` frames them (stream/wire/markers.py): its windows close when its batch ends."""
        producer = make_producer(self.settings.bootstrap_servers())
        n = 0
        for station, rows in reports.items():
            if batch is not None:
                producer.send(self.settings.topic_reports, key=station.encode(),
                              value=Marker("begin", batch, station).encode())
            for r in rows:
                producer.send(self.settings.topic_reports, key=station.encode(), value=json.dumps(r).encode())
                n += 1
            if batch is not None:
                producer.send(self.settings.topic_reports, key=station.encode(),
                              value=Marker("end", batch, station, len(rows)).encode())
        for station, raw in extra:
            producer.send(self.settings.topic_reports, key=station.encode(), value=raw)
            n += 1
        producer.flush()
        producer.close()
        self.pushed += n
        return n

    def accounting(self) -> dict[str, int]:
        return self.repo.accounting()

    def accounted(self) -> int:
        acc = self.accounting()
        return sum(acc.get(k, 0) for k in ACCOUNTED)

    def wait_settled(self, timeout: float = 90.0) -> dict[str, int]:
        """Until every pushed report is accounted for and every release is published.

        Each reading is one snapshot (:meth:`db.releases.ReleaseRepository.accounting` reads at
        REPEATABLE READ on PostgreSQL). The state counts as settled only when two consecutive readings
        agree: a reading taken between two steps of the worker (a batch written, its window not yet
        due) can look settled for a moment."""
        deadline = time.monotonic() + timeout
        acc: dict[str, int] = {}
        previous: dict[str, int] | None = None
        while time.monotonic() < deadline:
            for w in self.workers:
                if w.poll() is not None and w.returncode not in (0, 86, -9):
                    raise AssertionError(f"worker exited with {w.returncode}: {self.logs()[-3000:]}")
            acc = self.accounting()
            settled = (sum(acc.get(k, 0) for k in ACCOUNTED) >= self.pushed and acc.get("windows_open", 1) == 0
                       and acc.get("releases_stored", 1) == 0)
            if settled and acc == previous:
                return acc
            previous = acc if settled else None
            time.sleep(0.5)
        raise AssertionError(f"not settled after {timeout}s: pushed {self.pushed}, {acc}\n{self.logs()[-3000:]}")

    def wait_for(self, predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.3)
        raise AssertionError(f"condition not met within {timeout}s\n{self.logs()[-3000:]}")

    def read_dlq(self, timeout: float = 60.0) -> list[Any]:
        """The dead-letter topic once it holds every dead letter the ledger counts: the worker counts one
        in the ledger just before it sends it, so a settled ledger may be a send ahead of the topic."""
        expected = self.accounting().get("dlq", 0)
        out: list[Any] = []

        def complete() -> bool:
            nonlocal out
            out = self.read_topic(self.settings.topic_dlq)
            return len(out) >= expected

        self.wait_for(complete, timeout)
        return out

    def read_topic(self, topic: str, idle_s: float = 1.5) -> list[Any]:
        """Every message on ``topic`` up to the end offsets it has when called (read to them, not until some
        seconds of silence). ``idle_s`` of empty polls ends the read early only where the broker reports
        an end offset past its last record (tansu may; as :func:`stream.ops.republish.topic_keys`)."""
        consumer = make_consumer(self.settings.bootstrap_servers(), [topic])
        out: list[Any] = []
        try:
            parts = list(consumer.assignment())
            end = consumer.end_offsets(parts)
            last = time.monotonic()
            while any(consumer.position(tp) < end[tp] for tp in parts) and time.monotonic() - last < idle_s:
                for msgs in consumer.poll(timeout_ms=300, max_records=10_000).values():
                    out += [json.loads(m.value) for m in msgs]
                    last = time.monotonic()
        finally:
            consumer.close()
        return out

    def releases(self) -> tuple[ReleaseAssembler, list[tuple[dict[str, Any], list[dict[str, Any]]]]]:
        """Complete releases as a consumer sees them (manifest + checksum-verified records)."""
        asm = ReleaseAssembler(self.public_key())
        for m in self.read_topic(self.settings.topic_releases):
            asm.add_manifest(m)
        for r in self.read_topic(self.settings.topic_anonymized):
            asm.add_record(r)
        return asm, list(asm.complete())

    def public_key(self) -> Any:
        """The public half of the workers' signing key (embedded: generated under the scenario's folder)."""
        from stream.config.settings import secret_value
        from stream.wire.signing import consumer_public_key, load_private_key

        secret = secret_value(self.settings.signing_key)
        if secret is None:
            load_private_key(None, self.workdir, False)
        return consumer_public_key(None, secret, self.workdir)

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.workdir.glob("worker-*.log")))

    def close(self) -> None:
        for w in self.workers:
            stop_process(w)
        self.db.dispose()


VOLATILE = ("release_id", "files", "checksum", "signature", "rows", "deployment")


def release_contents(complete: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """What each release says, without what names it or orders its records (``VOLATILE``: its id, the
    hashes over its id or record order, its signature), the DP noise (``dp.tables``: drawn afresh by
    design, never seeded), its budget blocks' running totals (``spent_*``, ``remaining_*``: two releases
    of one station-day charge one block, in whichever order they ran) and how its window was closed
    (``close_reason``: ``reclaimed`` after a worker died with it): the manifest's other fields and its
    records' values as a sorted list, the releases sorted. Equal for two runs that released the same content."""
    out = []
    for manifest, records in complete:
        body = {k: v for k, v in manifest.items() if k not in VOLATILE}
        body["window"] = {k: v for k, v in body["window"].items() if k != "close_reason"}
        if body.get("dp") is not None:  # the blocks' running totals depend on which release charged first
            blocks = [{k: v for k, v in b.items() if not k.startswith(("spent_", "remaining_"))}
                      for b in body["dp"].get("blocks", [])]
            body["dp"] = {k: v for k, v in body["dp"].items() if k != "tables"} | {"blocks": blocks}
        body["records"] = sorted(json.dumps(r["values"]) for r in records)
        out.append(body)
    return sorted(out, key=lambda b: json.dumps(b, sort_keys=True, default=str))
