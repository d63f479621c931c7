"""`anonstream push` options: the receipt wait and its help; a topic no worker serves."""

from __future__ import annotations

import uuid
from pathlib import Path

import pandas as pd
import pytest

from stream.cli.main import main
from stream.cli.push import PUSH_HELP
from stream.ops.broker import EmbeddedBroker
from stream.testing.reports import day_of_reports, spec_ref


def test_a_negative_wait_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.csv"
    path.write_text("report_id\nx\n")
    assert main(["push", str(path), "--wait", "-1", "--broker", "kafka://127.0.0.1:1"]) == 2
    assert capsys.readouterr().err.strip() == "error: --wait must be 0 or more seconds, got -1"


def test_the_help_explains_the_receipt() -> None:
    for words in ("receipt", "--wait", "--no-wait", "another spec", "idempotent", "0600", "identifiers",
                  'id_scope = "global"'):
        assert words in PUSH_HELP, words


@pytest.mark.broker
def test_a_topic_no_worker_serves_is_pushed_to_with_a_warning(kafka: EmbeddedBroker, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from stream.ops.broker import ensure_topics

    topic = f"t{uuid.uuid4().hex[:8]}.reports"
    ensure_topics(kafka.bootstrap, {topic: 1})
    path = tmp_path / "r.csv"
    pd.DataFrame(day_of_reports(1, 5, seed=3)["S1"]).to_csv(path, index=False)
    assert main(["push", str(path), "--station", "S1", "--broker", kafka.url, "--topic", topic,
                 "--spec", spec_ref()]) == 0
    captured = capsys.readouterr()
    assert "sent 5 report(s), rejected 0" in captured.out and "receipt:" not in captured.out
    assert f"push: warning: no worker has advertised on {topic}" in captured.err


def _keyed(kafka: EmbeddedBroker, topic: str, want: int) -> list[tuple[bytes, dict]]:
    """``want`` messages of ``topic`` as (key, JSON value), polled until they are all there (or 30 s)."""
    import json
    import time

    from stream.analyst.consumer import make_consumer

    consumer = make_consumer(kafka.bootstrap, [topic])
    out: list[tuple[bytes, dict]] = []
    deadline = time.monotonic() + 30
    try:
        while len(out) < want and time.monotonic() < deadline:
            for msgs in consumer.poll(timeout_ms=500).values():
                out += [(m.key, json.loads(m.value)) for m in msgs]
    finally:
        consumer.close()
    return out


@pytest.mark.broker
def test_push_names_station_ids_that_are_one_station_and_sends_them_as_one(kafka: EmbeddedBroker, tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from stream.ops.broker import ensure_topics

    topic = f"t{uuid.uuid4().hex[:8]}.reports"
    ensure_topics(kafka.bootstrap, {topic: 2})
    day = day_of_reports(2, 6, seed=39)
    rows = [r | {"station_id": "08" if i % 2 else "8"} for i, r in enumerate(day["S1"])] + day["S2"]
    path = tmp_path / "export.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    assert main(["push", str(path), "--broker", kafka.url, "--topic", topic, "--spec", spec_ref()]) == 0
    captured = capsys.readouterr()
    assert ("push: warning: station ids `08` and `8` are one station after normalisation (leading zeros and "
            "spaces are ignored)") in captured.err.splitlines()
    assert "sent 12 report(s), rejected 0" in captured.out
    sent = _keyed(kafka, topic, 12 + 4)  # 12 reports, a begin and an end marker per station
    reports = [(k, v) for k, v in sent if "$batch" not in v]
    markers = sorted((k, v["$batch"], v["station"], v.get("rows")) for k, v in sent if "$batch" in v)
    assert len(reports) == 12 and {k for k, v in reports if v["station_id"] in ("08", "8")} == {b"8"}
    assert markers == [(b"8", "begin", "8", None), (b"8", "end", "8", 6), (b"S2", "begin", "S2", None),
                       (b"S2", "end", "S2", 6)]  # one batch of station 8, not one of `08` and one of `8`

    # with --station: a file that writes the station otherwise is that station, named as one
    capsys.readouterr()
    assert main(["push", str(path), "--station", "008", "--broker", kafka.url, "--topic", topic,
                 "--spec", spec_ref(), "--no-wait"]) == 1  # S2's rows do not match --station
    captured = capsys.readouterr()
    assert "sent 6 report(s), rejected 6" in captured.out and "station-mismatch" in captured.out
    assert ("push: warning: station ids `008`, `08` and `8` are one station after normalisation (leading zeros "
            "and spaces are ignored)") in captured.err.splitlines()
