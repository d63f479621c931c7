"""`anonstream push`: local validation, rejected rows reported with reasons, non-zero exit, valid rows sent."""

from __future__ import annotations

import json
import uuid

import pandas as pd
import pytest

from stream.broker import ensure_topics
from stream.consumer import make_consumer
from tests.stream.reports import day_of_reports, spec_ref

pytestmark = [pytest.mark.broker]


def _read(kafka, topic: str) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    consumer = make_consumer(kafka.bootstrap, [topic])
    out: list[dict[str, object]] = []
    try:
        for _ in range(10):
            for msgs in consumer.poll(timeout_ms=300).values():
                out += [json.loads(m.value) for m in msgs]
    finally:
        consumer.close()
    return out


def test_push_sends_valid_rows_and_reports_rejects(kafka, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from stream.cli.main import main

    topic = f"t{uuid.uuid4().hex[:8]}.reports"
    ensure_topics(kafka.bootstrap, {topic: 2})
    rows = day_of_reports(1, 30, seed=2)["S1"]
    rows[3] = rows[3] | {"offence": "Not an offence"}
    rows[7] = rows[7] | {"suburb": "Nowhere"}
    rows[9] = rows[9] | {"station_id": "S9"}
    path = tmp_path / "reports.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    code = main(["push", str(path), "--station", "S1", "--broker", kafka.url, "--topic", topic,
                 "--spec", spec_ref()])
    captured = capsys.readouterr()
    assert code == 1
    assert "sent 27 report(s), rejected 3" in captured.out
    for reason in ("unknown-offence", "value-not-in-hierarchy", "station-mismatch"):
        assert reason in captured.out
    assert "row 4:" in captured.err and "row 8:" in captured.err and "row 10:" in captured.err
    sent = _read(kafka, topic)
    assert len(sent) == 27 and {r["station_id"] for r in sent} == {"S1"}

    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(json.dumps(r) for r in day_of_reports(1, 5, seed=3)["S1"]))
    assert main(["push", str(good), "--station", "S1", "--broker", kafka.url, "--topic", topic,
                 "--spec", spec_ref()]) == 0
