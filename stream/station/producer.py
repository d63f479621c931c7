"""Stations: validate reports locally and push them to ``crime.reports`` with a kafka-python producer.

Messages are keyed by station id in its canonical form (``08`` and ``8`` are station ``8``, on one
partition; stable partitioning by the broker's murmur2 of the key, never Python's ``hash()``); a row
whose station column spells ``--station`` differently (``08`` for ``8``) is that station. The file
is read, validated and sent in chunks (``chunk`` rows at a time, each chunk flushed before the next
is read), so memory does not grow with the file. Rejected rows are not sent: each is counted, the
first ``keep`` are kept for the report, and every one can be written to a rejects file with its
reason (:mod:`stream.io.rejects`). A report id seen earlier in the same file is rejected as
``duplicate-id`` naming the first line (found beforehand by :mod:`stream.io.dupes`, also in bounded
memory).

With a ``push_id`` every report sent carries it and its number within the push (0, 1, ...) in its
message headers (:func:`stream.wire.receipts.push_headers`), so the worker can send a receipt for it
(:mod:`stream.station.receipt`). A broker that stops acknowledging ends the push after the chunk it
failed on, without raising: :attr:`PushResult.error` says why, and the rows not acknowledged are
reported as not sent.
"""

from __future__ import annotations

import json
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.canonical import canonical_id
from core.encoding import Schema
from stream.intake.validate import Rejected, ReportValidator
from stream.io.rejects import RejectDetail, Rejection
from stream.io.rows import Row, chunks
from stream.wire.receipts import push_headers


class RejectSink(Protocol):
    def write(self, row: dict[str, Any], rejection: Rejection) -> None: ...


@dataclass
class PushResult:
    sent: int = 0
    rejected_count: int = 0
    rejected: list[Rejection] = field(default_factory=list)  # the first `keep` rejections, in file order
    counts: Counter[str] = field(default_factory=Counter)
    push_id: str | None = None
    numbered: int = 0  # reports handed to the producer, numbered 0 .. numbered-1 in their headers
    lines: array[int] = field(default_factory=lambda: array("I"))  # the file line of each numbered report
    error: str | None = None  # why the broker stopped acknowledging (the push ended there)

    def reasons(self) -> Counter[str]:
        return self.counts

    def add(self, rejection: Rejection, keep: int) -> None:
        self.rejected_count += 1
        self.counts[rejection.reason] += 1
        if len(self.rejected) < keep:
            self.rejected.append(rejection)


def _why(exc: Exception) -> str:
    """One line: the exception's class and the first line of its message (which may name the class already)."""
    name, text = type(exc).__name__, (str(exc).strip().splitlines() or [""])[0]
    text = text.removeprefix(f"{name}: ").removeprefix(name).strip(" :")
    return f"{name}: {text[:160]}" if text else name


def as_sent(raw: dict[str, Any], station_col: str, station: str | None) -> dict[str, Any]:
    """A file row as push sends it (JSON values, ``--station`` filled in), for reports already checked."""
    row = _jsonable_row(dict(raw))
    if station is not None:
        row[station_col] = station
    return row


def other_station(validator: ReportValidator, row: dict[str, Any], station: str) -> Any:
    """The row's station value when it names another station than ``--station``, else None (empty: filled).

    Both sides are compared as the worker keys them: through the spec's ``station_map`` (a row writing
    the area name ``Queens North`` is the station it maps to), then in canonical form (``08`` is ``8``).
    """
    given = row.get(validator.station_col)
    if given in (None, ""):
        return None
    mine = validator.station_value({validator.station_col: given})
    wanted = validator.station_value({validator.station_col: station})
    return None if canonical_id(mine) == canonical_id(wanted) else given


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


def push_reports(rows: Iterable[Row], schema: Schema, producer: Any, topic: str,
                 station: str | None = None, progress: Callable[[int, int], None] | None = None,
                 total: int = 0, rejects: RejectSink | None = None, chunk: int = 5000,
                 keep: int = 1000, repeated: dict[int, int] | None = None,
                 inspect: Callable[[list[Any]], None] | None = None, push_id: str | None = None) -> PushResult:
    """Validate and send every ``(line, row)``; returns what was sent and what was rejected.

    ``inspect`` is called with each chunk's validated reports (``Clean``) before the chunk is sent
    (``push`` asks the ledger about them: :mod:`stream.station.preview`).

    ``repeated`` maps the line of a row whose report id appeared earlier in the file to that
    earlier line (:func:`stream.io.dupes.repeated_ids`); those rows are rejected as ``duplicate-id``.
    """
    from kafka.errors import KafkaError

    validator = ReportValidator(schema)
    station_col, id_col = validator.station_col, validator.id_col
    result = PushResult(push_id=push_id)
    repeated = repeated or {}
    done = 0

    def reject(line: int, raw: dict[str, Any], rej: Rejection) -> None:
        result.add(rej, keep)
        if rejects is not None:
            rejects.write(raw, rej)

    for part in chunks(iter(rows), chunk):
        futures = []
        valid = []
        for line, raw in part:
            earlier = repeated.get(line)
            row = _jsonable_row(dict(raw))
            if station is not None:
                given = other_station(validator, row, station)
                if given is not None:
                    reject(line, raw, Rejection(line, "station-mismatch",
                                                f"field '{station_col}' does not match --station",
                                                RejectDetail(station_col, str(given))))
                    continue
                row[station_col] = station
            if earlier is not None:
                reject(line, raw, Rejection(line, "duplicate-id", f"field '{id_col}': report id already on "
                                            f"line {earlier} of this file", RejectDetail(id_col, str(row[id_col]))))
                continue
            checked = validator.check(dict(row))
            if isinstance(checked, Rejected):
                reject(line, raw, Rejection(line, checked.reason, checked.message, checked.detail))
                continue
            valid.append((checked, row, line))
        if inspect is not None and valid:
            inspect([checked for checked, _row, _line in valid])
        try:
            for checked, row, line in valid:
                headers = push_headers(push_id, result.numbered) if push_id is not None else None
                futures.append(producer.send(topic, key=checked.station_id.encode(), headers=headers,
                                             value=json.dumps(row, separators=(",", ":")).encode()))
                result.numbered += 1
                result.lines.append(line)
            producer.flush()
        except KafkaError as exc:
            result.error = _why(exc)
        for fut in futures:
            try:
                fut.get(timeout=30)
                result.sent += 1
            except KafkaError as exc:
                result.error = result.error or _why(exc)
        if result.error is not None:
            break
        done += len(part)
        if progress is not None:
            progress(done, max(total, done))
    return result
