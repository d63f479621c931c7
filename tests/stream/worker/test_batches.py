"""Batch markers in the worker's input (stream/worker/batches.py): split from the reports, never reports."""

from __future__ import annotations

import json

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
    reports, begins, ends = intake.split(values)
    assert reports == [report, None, b"not json"]  # everything else goes to the validator (and its dead letters)
    assert begins == [BatchMark("S1", "b-1", "station:S1")] and ends == [BatchMark("S1", "b-1", "station:S1", 2)]
    assert "malformed batch marker" in caplog.text
