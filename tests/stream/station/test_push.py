"""`anonstream push`: local validation, rejected rows reported with reasons, non-zero exit, valid rows sent."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pandas as pd
import pytest

from stream.analyst.consumer import make_consumer
from stream.ops.broker import EmbeddedBroker, ensure_topics
from stream.testing.reports import day_of_reports, spec_ref

pytestmark = [pytest.mark.broker]


def _read(kafka: EmbeddedBroker, topic: str) -> list[dict[str, object]]:
    consumer = make_consumer(kafka.bootstrap, [topic])
    out: list[dict[str, object]] = []
    try:
        for _ in range(10):
            for msgs in consumer.poll(timeout_ms=300).values():
                out += [r for r in (json.loads(m.value) for m in msgs) if "$batch" not in r]  # reports, no markers
    finally:
        consumer.close()
    return out


def test_push_sends_valid_rows_and_reports_rejects(kafka: EmbeddedBroker, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
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
    assert "line 5:" in captured.err and "line 9:" in captured.err and "line 11:" in captured.err
    sent = _read(kafka, topic)
    assert len(sent) == 27 and {r["station_id"] for r in sent} == {"S1"}

    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(json.dumps(r) for r in day_of_reports(1, 5, seed=3)["S1"]))
    assert main(["push", str(good), "--station", "S1", "--broker", kafka.url, "--topic", topic,
                 "--spec", spec_ref()]) == 0


def test_push_rejects_file_can_be_fixed_and_pushed_again(kafka: EmbeddedBroker, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from stream.cli.main import main

    topic = f"t{uuid.uuid4().hex[:8]}.reports"
    ensure_topics(kafka.bootstrap, {topic: 2})
    rows = day_of_reports(1, 20, seed=4)["S1"]
    rows[2] = rows[2] | {"offence": "theft"}
    rows[5] = rows[5] | {"age": 34.5}
    rows[6] = rows[6] | {"dob": "1990-13-45"}
    rows[8] = rows[8] | {"suburb": "gardens"}
    rows[11] = rows[11] | {"report_id": rows[1]["report_id"]}  # repeated inside the file
    path = tmp_path / "reports.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    rejects = tmp_path / "rejects.csv"
    args = ["--station", "S1", "--broker", kafka.url, "--topic", topic, "--spec", spec_ref()]
    assert main(["push", str(path), *args, "--rejects", str(rejects)]) == 1
    out = capsys.readouterr()
    assert "sent 15 report(s), rejected 5" in out.out
    err = out.err
    # lines as the file shows them (header = line 1), the bad value, the closest allowed value
    assert "line 4: unknown-offence" in err and "(got 'theft'; did you mean 'Theft'?)" in err
    assert "line 7: invalid-value: field 'age': value is not a whole number" in err and "use a whole number" in err
    assert "line 8: invalid-value: field 'dob': value is not a date in the declared format" in err
    assert "line 10: value-not-in-hierarchy" in err and "did you mean 'Gardens'?" in err
    assert "line 13: duplicate-id: field 'report_id': report id already on line 3" in err

    bad = pd.read_csv(rejects, dtype=str, keep_default_na=False)
    assert rejects.stat().st_mode & 0o777 == 0o600  # it holds identifiers, and says so in its first column
    assert bad.columns[0].startswith("reject_note:") and "holds identifiers" in bad.columns[0]
    assert bad["reject_line"].tolist() == ["4", "7", "8", "10", "13"]
    assert bad["reject_reason"].tolist() == ["unknown-offence", "invalid-value", "invalid-value",
                                             "value-not-in-hierarchy", "duplicate-id"]
    assert bad["reject_hint"].tolist() == ["did you mean 'Theft'?", "use a whole number",
                                           "", "did you mean 'Gardens'?", ""]
    assert list(bad.columns[5:]) == list(pd.read_csv(path, nrows=0).columns)  # the original row, as it was
    assert bad.loc[0, "offence"] == "theft" and bad.loc[1, "age"] == "34.5"

    fixed = bad.copy()
    fixed.loc[0, "offence"], fixed.loc[1, "age"], fixed.loc[2, "dob"] = "Theft", "34", "1990-12-15"
    fixed.loc[3, "suburb"], fixed.loc[4, "report_id"] = "Gardens", "S1-fixed-1"
    fixed.to_csv(rejects, index=False)
    assert main(["push", str(rejects), *args]) == 0
    assert "sent 5 report(s), rejected 0" in capsys.readouterr().out
    sent = _read(kafka, topic)
    assert len(sent) == 20 and len({r["report_id"] for r in sent}) == 20
    assert not any(k.startswith("reject_") for r in sent for k in r)
