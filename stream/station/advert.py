"""Which worker serves a reports topic, and whether it runs the spec ``push`` checked the file against.

Workers advertise on the topic's companion ``<topic>.workers`` (:mod:`stream.wire.receipts`): their
feed and their spec's name and version (the SHA-256 of its canonical content). Before sending anything
``push`` reads the latest advert of each worker (the topic's tail) and

* refuses (one ``error:`` line, exit 2) when a live worker runs another spec, or another feed than the
  ``--feed`` pushed to: the worker would dead-letter every report;
* warns when no worker advertised in the last :data:`~stream.wire.receipts.ADVERT_TTL_S` seconds (by this
  machine's clock): the reports wait in the topic for a worker, and there is no receipt to wait for.

The broker is the channel because a station can always read it (it pushes there); the ledger is on the
worker's side.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from core.errors import ParamsError
from stream.ops.kafka_clients import open_client
from stream.wire.receipts import ADVERT_TTL_S, adverts_topic

TAIL = 500  # adverts read from the end of each partition: the latest of up to 50 workers over 100 s


@dataclass(frozen=True)
class Advert:
    worker: str
    feed: str
    spec_name: str
    spec_version: str
    at: datetime

    @staticmethod
    def parse(raw: bytes | None) -> Advert | None:
        try:
            obj = json.loads(raw or b"")
            spec = obj["spec"]
            at = datetime.fromisoformat(obj["at"])
            return Advert(str(obj["worker"]), str(obj["feed"]), str(spec["name"]), str(spec["version"]),
                          at if at.tzinfo else at.replace(tzinfo=UTC))
        except (ValueError, TypeError, KeyError, UnicodeDecodeError):
            return None


def read_adverts(bootstrap: list[str] | str, topic: str, timeout: float = 5.0) -> list[Advert]:
    """The latest advert of each worker that advertised on ``topic``'s companion (none if it has none)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = open_client(KafkaConsumer, bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                           client_id="anonstream-push-adverts", request_timeout_ms=10_000,
                           allow_auto_create_topics=False)
    latest: dict[str, Advert] = {}
    try:
        name = adverts_topic(topic)
        parts = consumer.partitions_for_topic(name)
        if not parts:
            return []
        tps = [TopicPartition(name, p) for p in sorted(parts)]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        starts = consumer.beginning_offsets(tps)
        for tp in tps:
            consumer.seek(tp, max(starts[tp], ends[tp] - TAIL))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(consumer.position(tp) < ends[tp] for tp in tps):
            for msgs in consumer.poll(timeout_ms=200).values():
                for m in msgs:
                    ad = Advert.parse(m.value)
                    if ad is not None and (ad.worker not in latest or latest[ad.worker].at <= ad.at):
                        latest[ad.worker] = ad
    finally:
        with contextlib.suppress(Exception):
            consumer.close()
    return sorted(latest.values(), key=lambda a: a.worker)


def live(adverts: list[Advert], now: datetime | None = None) -> list[Advert]:
    """The adverts of workers still advertising (the last one younger than ``ADVERT_TTL_S``)."""
    now = now or datetime.now(UTC)
    return [a for a in adverts if (now - a.at).total_seconds() <= ADVERT_TTL_S]


def check_workers(adverts: list[Advert], topic: str, spec_name: str, spec_version: str,
                  feed: str | None) -> list[Advert]:
    """The live workers serving ``topic``; :class:`ParamsError` (exit 2) when one runs another spec
    (or, with ``feed``, another feed): nothing has been sent yet."""
    workers = live(adverts)
    for a in workers:
        if a.spec_version != spec_version:
            same = (" (the same name: the spec files differ, or the worker and this machine run different "
                    "anonstream versions)") if a.spec_name == spec_name else ""
            raise ParamsError(
                f"the worker serving {topic} ({a.worker}) runs spec '{a.spec_name}' (version {a.spec_version[:12]}), "
                f"not '{spec_name}' (version {spec_version[:12]}) that this file was checked against{same}; nothing "
                "was sent: push with the worker's spec (--spec), to the feed that uses this one (--feed), or run the "
                "worker with this spec", reason="spec-mismatch")
        if feed is not None and a.feed != feed:
            raise ParamsError(f"the worker serving {topic} ({a.worker}) runs feed '{a.feed}', not '{feed}'; nothing "
                              "was sent: check --feed and --topic", reason="feed-mismatch")
    return workers


def describe_none(adverts: list[Advert], topic: str) -> str:
    """The warning when no worker is live on ``topic`` (naming the last one seen, if any)."""
    text = f"push: warning: no worker has advertised on {topic} in the last {ADVERT_TTL_S:.0f}s"
    if adverts:
        last = max(adverts, key=lambda a: a.at)
        text += f" (the last, {last.worker}, at {last.at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC, ran spec " \
                f"'{last.spec_name}')"
    return text + ": the reports wait in the topic for one, and there is no receipt to wait for"


def summary(workers: list[Any]) -> str:
    names = ", ".join(a.worker for a in workers[:3]) + (" ..." if len(workers) > 3 else "")
    return f"push: {len(workers)} worker(s) serve this topic ({names}), spec '{workers[0].spec_name}' " \
           f"(version {workers[0].spec_version[:12]}), as this file was checked against"
