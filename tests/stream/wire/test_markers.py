"""Batch markers on the reports topic (stream/wire/markers.py): what is a marker, what is a report."""

from __future__ import annotations

import json

import pytest

from stream.wire.markers import BadMarker, Marker, parse_marker


def test_a_marker_round_trips() -> None:
    begin, end = Marker("begin", "b-1", "S1"), Marker("end", "b-1", "S1", 5123)
    assert json.loads(begin.encode()) == {"$batch": "begin", "id": "b-1", "station": "S1"}
    assert json.loads(end.encode()) == {"$batch": "end", "id": "b-1", "station": "S1", "rows": 5123}
    assert parse_marker(begin.encode()) == begin and parse_marker(end.encode().decode()) == end
    spaced = b'{ "station": "S1", "$batch" : "end", "rows": 0, "id": "b-1" }'  # any JSON layout
    assert parse_marker(spaced) == Marker("end", "b-1", "S1", 0)


@pytest.mark.parametrize("raw", [None, b"", b"not json", b'{"report_id": "r1", "station_id": "S1"}', b"[1]",
                                 b'"$batch"', b'{"note": "mentions \\"$batch\\" in a value"}'])
def test_reports_and_other_messages_are_not_markers(raw: bytes | None) -> None:
    assert parse_marker(raw) is None  # left to the validator (a report, or a dead letter with its reason)


@pytest.mark.parametrize("obj", [{"$batch": "middle", "id": "b-1", "station": "S1"},
                                 {"$batch": "begin", "id": "", "station": "S1"},
                                 {"$batch": "begin", "id": "b 1", "station": "S1"},
                                 {"$batch": "begin", "id": "b-1", "station": "S/1"},
                                 {"$batch": "end", "id": "b-1", "station": "S1"},
                                 {"$batch": "end", "id": "b-1", "station": "S1", "rows": -1},
                                 {"$batch": "end", "id": "b-1", "station": "S1", "rows": True}])
def test_a_malformed_marker_is_refused(obj: dict[str, object]) -> None:
    with pytest.raises(BadMarker):
        parse_marker(json.dumps(obj).encode())
