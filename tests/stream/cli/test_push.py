"""`anonstream push` options: the receipt wait and its help; a topic no worker serves."""

from __future__ import annotations

import uuid

import pandas as pd
import pytest

from stream.cli.main import main
from stream.cli.push import PUSH_HELP
from stream.testing.reports import day_of_reports, spec_ref


def test_a_negative_wait_is_a_usage_error(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "r.csv"
    path.write_text("report_id\nx\n")
    assert main(["push", str(path), "--wait", "-1", "--broker", "kafka://127.0.0.1:1"]) == 2
    assert capsys.readouterr().err.strip() == "error: --wait must be 0 or more seconds, got -1"


def test_the_help_explains_the_receipt() -> None:
    for words in ("receipt", "--wait", "--no-wait", "another spec", "idempotent", "0600", "identifiers",
                  'id_scope = "global"'):
        assert words in PUSH_HELP, words


@pytest.mark.broker
def test_a_topic_no_worker_serves_is_pushed_to_with_a_warning(kafka, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
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
