"""Batch markers in the worker's input (stream/worker/batches.py): split from the reports, never reports."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from db.batches import BatchMark
from stream.wire.markers import Marker
from stream.worker.batches import MarkerIntake


def test_markers_are_taken_out_of_the_input_in_order(caplog: pytest.LogCaptureFixture) -> None:
    # no ledger: this test only takes markers out of the input, which never reaches the database
    intake = MarkerIntake(None, "default", lambda st: f"station:{st}")  # type: ignore[arg-type]
    report = json.dumps({"report_id": "r1", "station_id": "S1"}).encode()
    values = [Marker("begin", "b-1", "S1").encode(), report, None, b"not json",
              b'{"$batch": "sideways", "id": "b-1", "station": "S1"}', Marker("end", "b-1", "S1", 2).encode()]
    reports, begins, ends, malformed = intake.split(values)
    assert reports == [report, None, b"not json"]  # everything else goes to the validator (and its dead letters)
    assert begins == [BatchMark("S1", "b-1", "station:S1")] and ends == [BatchMark("S1", "b-1", "station:S1", 2)]
    assert malformed == [(values[4], "'$batch' must be begin or end")]
    assert "malformed batch marker" in caplog.text


@pytest.mark.parametrize(("raw", "station"), [
    (b'{"$batch": "end", "id": "b-1", "station": "08"}', "8"),  # no rows: its station, in canonical form
    (b'{"$batch": "begin", "id": "b 1", "station": "S/1"}', None),  # no valid station to key it by
    (b'{"$batch": "begin", "id": "b-1", "station": 7}', "7"),  # a number, as a report's station_id may be
    (b'{"$batch": "begin", "id": "b-1"}', None)])
def test_a_malformed_marker_is_dead_lettered_not_dropped(raw: bytes, station: str | None) -> None:
    intake = MarkerIntake(None, "default", lambda st: f"station:{st}")  # type: ignore[arg-type]
    report = json.dumps({"report_id": "r1", "station_id": "S1"}).encode()
    now = datetime(2026, 11, 29, tzinfo=UTC)
    reports, ends, bad = asyncio.run(intake.before([report, raw], now))  # no begin marker: no ledger write
    assert reports == [report] and ends == []
    letters = [(d["reason"], d["station_id"], d["payload"]) for d in bad.dead]
    assert letters == [("malformed-marker", station, raw.decode())]
    assert bad.dead[0]["message"].startswith("malformed batch marker: ") and bad.dead[0]["at"] == now.isoformat()
    # counted by the ledger like any dead letter (its DLQ events and the accounting's dlq)
    assert [(r.station_id, r.reason, r.message) for r in bad.rejections] == [
        (station or "unknown", "malformed-marker", bad.dead[0]["message"])]
