"""Stations: validate reports locally and push them to ``crime.reports`` with a kafka-python producer.

Messages are keyed by station id (stable partitioning by the broker's murmur2 of the key, never
Python's ``hash()``). Rejected rows are not sent; they are reported with their row number and a
one-line reason, and the caller exits non-zero.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from core.encoding import Schema
from stream.validate import Rejected, ReportValidator


@dataclass
class PushResult:
    sent: int = 0
    rejected: list[tuple[int, str, str]] = field(default_factory=list)  # (row number, reason, message)

    def reasons(self) -> Counter[str]:
        return Counter(r for _, r, _ in self.rejected)


def make_producer(bootstrap: list[str] | str, **overrides: Any) -> Any:
    from kafka import KafkaProducer

    config: dict[str, Any] = {"bootstrap_servers": bootstrap, "acks": "all", "linger_ms": 20,
                              "batch_size": 256 * 1024, "enable_idempotence": False,
                              "max_in_flight_requests_per_connection": 5, "client_id": "anonstream-push"}
    config.update(overrides)
    return KafkaProducer(**config)


def _jsonable_row(row: dict[str, Any]) -> dict[str, Any]:
    """Plain JSON values: NaN -> None, timestamps -> ISO-8601, numpy scalars -> Python scalars."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if v is None or (isinstance(v, float) and v != v):
            out[k] = None
        elif hasattr(v, "isoformat"):
            out[k] = v.isoformat()
        elif hasattr(v, "item"):
            out[k] = v.item()
        else:
            out[k] = v
    return out


def push_reports(rows: Iterable[dict[str, Any]], schema: Schema, producer: Any, topic: str,
                 station: str | None = None, progress: Callable[[int, int], None] | None = None,
                 total: int = 0) -> PushResult:
    """Validate and send every row; returns what was sent and what was rejected (row numbers from 1)."""
    validator = ReportValidator(schema)
    station_col = validator.station_col
    result = PushResult()
    futures = []
    shown = 0
    for i, raw in enumerate(rows, start=1):
        row = _jsonable_row(dict(raw))
        if station is not None:
            given = row.get(station_col)
            if given not in (None, "") and str(given) != station:
                result.rejected.append((i, "station-mismatch",
                                        f"field '{station_col}' does not match --station"))
                continue
            row[station_col] = station
        checked = validator.check(row)
        if isinstance(checked, Rejected):
            result.rejected.append((i, checked.reason, checked.message))
            continue
        futures.append(producer.send(topic, key=checked.station_id.encode(),
                                     value=json.dumps(row, separators=(",", ":")).encode()))
        result.sent += 1
        if progress is not None and i % 500 == 0:
            progress(i, total)
            shown = i
    producer.flush()
    for fut in futures:
        fut.get(timeout=30)
    done = result.sent + len(result.rejected)
    if progress is not None and shown != done:
        progress(done, total or done)
    return result
