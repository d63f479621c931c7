"""No message can fail its batch: every cause found by the review, and arbitrary bytes / JSON values.

The pure screening step (:func:`stream.intake.validate.screen_batch`) is tested directly here, plus the
ledger write on SQLite and PostgreSQL (``tests/db`` fixtures); the real broker run is
``test_poison_messages.py``.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db import Database, PoolRepository, WindowPolicy
from stream.intake.dead_letters import DeadLetter
from stream.intake.guards import DLQ_PAYLOAD_CHARS, Limits, bounded_payload
from stream.intake.validate import Clean, Rejected, ReportValidator, screen_batch
from stream.io.specs import load_schema
from stream.testing.reports import spec_ref
from stream.wire.records import dumps

NOW = datetime(2024, 3, 2, 12, 0, tzinfo=UTC)
KEY = b"k" * 32


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# each cause of the review: the raw message and the reason it must be dead-lettered with
CAUSES: dict[str, tuple[Any, str]] = {
    "tombstone": (None, "tombstone"),
    "arbitrary-bytes": (b"\xff\xfe\x00garbage", "malformed-json"),
    "nested-10000-deep-in-ignored-field": ("NESTED", "malformed-json"),
    "time-year-1-plus-5h": ({"event_time": "0001-01-01T00:00:00+05:00"}, "implausible-time"),
    "time-year-9999": ({"event_time": "9999-12-31T12:00:00Z"}, "implausible-time"),
    "time-year-2999": ({"event_time": "2999-01-01T00:00:00Z"}, "implausible-time"),
    "time-year-1900": ({"event_time": "1900-01-01T00:00:00Z"}, "implausible-time"),
    "nul-in-station-id": ({"station_id": "S\x001"}, "invalid-station"),
    "station-id-200-chars": ({"station_id": "S" * 200}, "invalid-station"),
    "nul-in-passthrough-value": ({"reporter": "victim\x00"}, "invalid-value"),
    "report-id-2000-chars": ({"report_id": "r" * 2000}, "invalid-report-id"),
    "200kb-control-characters": ("CONTROL", "too-large"),
    "nested-person-field": ({"name": {"first": [1, 2]}}, "invalid-value"),
}


def raw_of(case: str, good: dict[str, Any]) -> Any:
    raw, _reason = CAUSES[case]
    if raw == "NESTED":
        return ('{"junk": ' + nested(10_000) + ", " + json.dumps(good)[1:]).encode()
    if raw == "CONTROL":  # raw control bytes: x6 once JSON-escaped into a dead letter
        return b"\x01" * 200_000
    if isinstance(raw, dict):
        return json.dumps(good | raw).encode()
    return raw


@pytest.mark.parametrize("case", sorted(CAUSES))
def test_each_cause_is_dead_lettered_with_its_reason(validator: ReportValidator, good: dict, case: str) -> None:
    raw = raw_of(case, good)
    out = screen_batch(validator, [raw, json.dumps(good).encode()], KEY, lambda st: f"station:{st}", True, NOW)
    assert [r.reason for r in out.rejections] == [CAUSES[case][1]]
    assert len(out.accepted) == 1  # the next valid report is accepted
    (dead,) = out.dead
    DeadLetter.model_validate(dead)
    assert len(dumps(dead)) < 1_000_000  # fits the producer's max_request_size
    station = out.rejections[0].station_id
    assert station == "unknown" or (len(station) <= 64 and station.isprintable())


def test_dead_letters_are_bounded_with_length_and_hash() -> None:
    raw = b"\x01" * 1_000_000  # 1 MB of control characters: 6 MB once JSON-escaped
    dead = bounded_payload(raw)
    assert dead["truncated"] and dead["payload_bytes"] == len(raw)
    assert dead["payload_sha256"] == hashlib.sha256(raw).hexdigest()
    assert len(dead["payload"]) == DLQ_PAYLOAD_CHARS
    assert len(json.dumps(dead)) < 200_000
    small = bounded_payload(b'{"a": 1}')
    assert not small["truncated"] and small["payload"] == '{"a": 1}'


def test_validation_bugs_become_internal_error_not_a_crash(validator: ReportValidator, good: dict,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_a: Any) -> None:
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(validator, "_value_error", boom)
    res = validator.screen(json.dumps(good).encode(), NOW)
    assert isinstance(res, Rejected) and res.reason == "internal-error" and "ZeroDivisionError" in res.message


ODD_VALUES: list[Any] = [None, True, 0, -1, 10**30, 1.5e308, "", " ", "\x00", "é" * 300, "2024-03-01T10:00:00Z",
                         "9999-12-31T00:00:00Z", [], {}, [[["x"]]], {"a": {"b": None}}, "S1", "x" * 65, "S1\n"]


def arbitrary_messages(good: dict[str, Any], n: int, seed: int) -> list[bytes]:
    """Seeded arbitrary messages for the real-broker run: random bytes, or a report with 1-3 fields
    (any field, or an extra one) replaced by odd JSON values; report ids distinct unless replaced."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        if rng.random() < 0.3:
            out.append(rng.integers(0, 256, size=int(rng.integers(0, 300)), dtype=np.uint8).tobytes())
            continue
        r = dict(good, report_id=f"{good['station_id']}-arb-{i}")
        for col in rng.choice([*sorted(good), "extra"], size=int(rng.integers(1, 4))):
            r[str(col)] = ODD_VALUES[int(rng.integers(len(ODD_VALUES)))]
        out.append(json.dumps(r).encode())
    return out


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=300),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20)


@st.composite
def messages(draw: Any, good: dict[str, Any]) -> Any:
    kind = draw(st.sampled_from(["bytes", "field", "fields", "none"]))
    if kind == "bytes":
        return draw(st.binary(max_size=400))
    if kind == "none":
        return None
    report = dict(good)
    for col in draw(st.lists(st.sampled_from(sorted(good) + ["extra"]), min_size=1, max_size=3)):
        report[col] = draw(json_values)
    try:
        return json.dumps(report).encode()
    except (ValueError, TypeError):
        return json.dumps(report, allow_nan=True).encode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_screening_never_raises_and_each_message_lands_once(validator: ReportValidator, good: dict,
                                                            data: st.DataObject) -> None:
    batch = data.draw(st.lists(messages(good), min_size=1, max_size=8))
    out = screen_batch(validator, batch, KEY, lambda st: f"station:{st}", True, NOW)
    assert len(out.accepted) + len(out.rejections) == len(batch)
    assert len(out.dead) == len(out.rejections) and len(out.raws) == len(out.accepted)
    for d in out.dead:
        assert len(dumps(d)) < 1_000_000
    for r in out.rejections:
        assert r.station_id == "unknown" or (len(r.station_id) <= 64 and r.station_id.isprintable())
        assert "\x00" not in r.message
    for a in out.accepted:
        assert len(a.station_id) <= 64 and all(len(str(v)) <= 256 for v in a.data.values())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_screen_then_ledger_never_raises_and_accounts_every_message(validator: ReportValidator, good: dict,
                                                                    tmp_path: Path, data: st.DataObject) -> None:
    """Arbitrary messages through screening AND the ledger write (SQLite): each is accepted, a duplicate
    or correction, or dead-lettered, exactly once."""
    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    from db import metadata

    metadata.create_all(db.engine)
    try:
        pool = PoolRepository(db, WindowPolicy(), "first-sight")
        batch = data.draw(st.lists(messages(good), min_size=1, max_size=8))
        out = screen_batch(validator, batch, KEY, lambda st: f"station:{st}", True, NOW)
        res = pool.ingest(out.accepted, out.rejections, NOW)
        assert res.accepted + res.duplicates + res.corrections + res.rejected == len(batch)
        assert res.rejected == len(out.rejections) + len(res.refused)
    finally:
        metadata.drop_all(db.engine)
        db.dispose()


def test_plausible_range_is_configurable(good: dict) -> None:
    strict = ReportValidator(load_schema(spec_ref()), (), Limits(max_future_s=0, horizon_days=1))
    old = json.dumps(good | {"event_time": "2024-02-01T00:00:00Z"}).encode()
    res = strict.check(old, NOW)
    assert isinstance(res, Rejected) and res.reason == "implausible-time"
    assert isinstance(strict.check(json.dumps(good | {"event_time": "2024-03-02T11:00:00Z"}).encode(), NOW), Clean)


def test_push_of_a_deeply_nested_line_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stream.cli.main import main

    path = tmp_path / "deep.jsonl"
    path.write_text('{"report_id": "a", "x": ' + nested(100_000) + "}\n")
    assert main(["push", str(path), "--station", "S1", "--broker", "kafka://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {path}, line 1: JSON nested too deeply"]


def test_stations_cli_add_list_remove(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import migrations
    from stream.cli.main import main

    url = f"sqlite:///{tmp_path / 'reg.db'}"
    migrations.upgrade(url)
    assert main(["stations", "add", "S1", "S2", "--note", "north", "--database", url]) == 0
    assert main(["stations", "add", "S1", "--database", url]) == 0
    assert "0 added, 1 already registered" in capsys.readouterr().out
    assert main(["stations", "add", "S\x001", "--database", url]) == 2
    assert capsys.readouterr().err.startswith("error: invalid station id")
    assert main(["stations", "remove", "S2", "S9", "--database", url]) == 1
    assert "not registered: S9" in capsys.readouterr().out
    assert main(["stations", "list", "--database", url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and out[1].split()[:2] == ["S1", "operator"] and out[1].endswith("north")
