"""A push is a batch (stream/station/batch.py): each station's begin marker before its first report, its
end marker (with the reports sent) after its last, on the station's key, in order."""

from __future__ import annotations

import json
from typing import Any

from stream.station.batch import BatchProducer
from stream.wire.markers import Marker, parse_marker


class Future:
    def __init__(self, log: list[str], what: str) -> None:
        self.log, self.what = log, what

    def get(self, timeout: float | None = None) -> None:
        self.log.append(f"acked {self.what}")


class FakeProducer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes | None]] = []
        self.log: list[str] = []

    def send(self, topic: str, key: bytes | None = None, value: bytes | None = None, **_kw: Any) -> Future:
        self.sent.append((topic, key, value))
        return Future(self.log, f"{key!r}:{len(self.sent)}")

    def flush(self) -> None:
        self.log.append("flush")

    def close(self) -> None:
        self.log.append("close")


def test_markers_frame_each_stations_reports() -> None:
    inner = FakeProducer()
    p = BatchProducer(inner, "reports", batch_id="b-7")
    for station, rid in (("S1", "a"), ("S2", "b"), ("S1", "c")):
        p.send("reports", key=station.encode(), value=json.dumps({"report_id": rid}).encode())
    p.send("elsewhere", key=b"S3", value=b"{}")  # another topic: passed through, no marker
    assert p.end_batch() == {"S1": 2, "S2": 1}
    p.close()
    kinds = [(t, k, (parse_marker(v) or json.loads(v or b"{}")) if t == "reports" else v) for t, k, v in inner.sent]
    assert kinds == [
        ("reports", b"S1", Marker("begin", "b-7", "S1")), ("reports", b"S1", {"report_id": "a"}),
        ("reports", b"S2", Marker("begin", "b-7", "S2")), ("reports", b"S2", {"report_id": "b"}),
        ("reports", b"S1", {"report_id": "c"}), ("elsewhere", b"S3", b"{}"),
        ("reports", b"S1", Marker("end", "b-7", "S1", 2)), ("reports", b"S2", Marker("end", "b-7", "S2", 1))]
    # a begin marker is acknowledged before the station's first report is sent; end markers after a flush
    assert inner.log[:2] == ["acked b'S1':1", "acked b'S2':3"]
    assert inner.log[2:] == ["flush", "flush", "acked b'S1':7", "acked b'S2':8", "close"]


def test_a_push_with_nothing_sent_sends_no_marker() -> None:
    inner = FakeProducer()
    assert BatchProducer(inner, "reports").end_batch() == {}
    assert inner.sent == []
