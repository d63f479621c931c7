"""The receipt wire format: headers, runs of report numbers, malformed receipts and adverts ignored."""

from __future__ import annotations

import json
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from stream.wire.receipts import (
    from_runs,
    new_push_id,
    origin,
    parse_receipt,
    push_headers,
    receipt,
    to_runs,
    topic_config,
)


def test_headers_carry_the_push_id_and_number_and_nothing_else() -> None:
    pid = new_push_id()
    headers = push_headers(pid, 41)
    assert origin(headers) == (pid, 41)
    assert origin(dict(headers)) == (pid, 41)  # faust gives headers as a mapping
    assert origin(None) is None and origin([]) is None
    assert origin([("anonstream-push", b"not-hex"), ("anonstream-seq", b"1")]) is None
    assert origin([("anonstream-push", pid.encode()), ("anonstream-seq", b"-1")]) is None
    assert origin([("anonstream-push", pid.encode())]) is None
    assert origin([("anonstream-push", b"\xff" * 32), ("anonstream-seq", b"1")]) is None


@given(st.sets(st.integers(min_value=0, max_value=5000), max_size=300))
def test_runs_round_trip(numbers: set[int]) -> None:
    runs = to_runs(numbers)
    assert all(a <= b for a, b in runs) and all(b + 1 < c for (_a, b), (c, _d) in pairwise(runs))
    assert {n for a, b in from_runs(runs) for n in range(a, b + 1)} == numbers


def test_a_receipt_round_trips_and_garbage_is_ignored() -> None:
    pid = new_push_id()
    msg = receipt(pid, "w1", "default", [0, 1, 2, 7], {"unknown-station": [3, 4]})
    parsed = parse_receipt(json.dumps(msg).encode())
    assert parsed is not None and parsed.push == pid and parsed.worker == "w1"
    assert parsed.accepted == [(0, 2), (7, 7)] and parsed.dead == {"unknown-station": [(3, 4)]}
    assert parse_receipt(b"not json") is None and parse_receipt(b"[1]") is None and parse_receipt(None) is None
    bad = parse_receipt(json.dumps({"push": pid, "accepted": [[5, 2], [1, "x"], [True, 3], [2, 3]],
                                    "dead": "no"}).encode())
    assert bad is not None and bad.accepted == [(2, 3)] and bad.dead == {}


def test_companion_topics_are_configured() -> None:
    assert topic_config("crime.reports.workers") == {"cleanup.policy": "compact"}
    assert "retention.ms" in topic_config("crime.reports.receipts")
    assert topic_config("crime.reports") == {}
