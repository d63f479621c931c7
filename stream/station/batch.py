"""A push is a batch: the producer wrapper that marks where each station's batch begins and ends.

:class:`BatchProducer` wraps the push's kafka-python producer. The first time a station's report is
sent it sends that station's *begin* marker first and waits until the broker has it (so no report
of the batch can overtake it, even when a produce request is retried); :meth:`BatchProducer.end_batch`
then sends one *end* marker per station, with how many of its reports the push sent, after every
report was acknowledged. The markers' format is :mod:`stream.wire.markers`; what the worker does
with them is :mod:`db.batches` (a station's windows close when its batch is complete, not when one
late row moves the watermark, nor because the worker took long to read its rows). A push that dies
before its end markers leaves the batch unfinished: its windows wait for the station's next push
(whose begin marker ends it), ``anonstream windows flush``, or a day (:data:`db.batches.BATCH_MAX_S`).
"""

from __future__ import annotations

import secrets
from typing import Any

from stream.wire.markers import Marker


def new_batch_id() -> str:
    """A fresh batch id (``b-`` and 16 hex digits)."""
    return f"b-{secrets.token_hex(8)}"


class BatchProducer:
    """A producer for one push to ``topic``: sends the batch markers around each station's reports
    (every other call goes to the wrapped producer)."""

    def __init__(self, producer: Any, topic: str, batch_id: str | None = None, timeout: float = 30.0) -> None:
        self.producer, self.topic, self.timeout = producer, topic, timeout
        self.batch_id = batch_id or new_batch_id()
        self.rows: dict[str, int] = {}  # station -> reports sent in this batch

    def send(self, topic: str, value: bytes | None = None, key: bytes | None = None, **kw: Any) -> Any:
        if topic == self.topic and key is not None:
            station = key.decode()
            if station not in self.rows:
                marker = Marker("begin", self.batch_id, station).encode()
                self.producer.send(topic, key=key, value=marker).get(timeout=self.timeout)
                self.rows[station] = 0
            self.rows[station] += 1
        return self.producer.send(topic, key=key, value=value, **kw)

    def end_batch(self) -> dict[str, int]:
        """Send each station's end marker (after flushing its reports) and wait for the broker; returns the
        reports sent per station."""
        self.producer.flush()
        futures = [self.producer.send(self.topic, key=station.encode(),
                                      value=Marker("end", self.batch_id, station, n).encode())
                   for station, n in sorted(self.rows.items())]
        self.producer.flush()
        for fut in futures:
            fut.get(timeout=self.timeout)
        return dict(self.rows)

    def __getattr__(self, name: str) -> Any:  # flush, close, ...
        return getattr(self.producer, name)
