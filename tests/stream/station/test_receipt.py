"""`anonstream push` against a running worker: it refuses a file of another spec before sending, and waits
for the worker's receipt (accepted, dead-lettered by reason); pushing again is idempotent.

One worker process (stations must be registered) serves the whole module.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import func, select

from db.models import PendingReport
from db.stations import register_seen
from stream.io.specs import resolve_spec_path
from stream.ops.broker import EmbeddedBroker
from stream.ops.kafka_clients import open_client
from stream.station.advert import live, read_adverts
from stream.testing.reports import day_of_reports, spec_ref
from stream.testing.scenario import Scenario
from stream.testing.services import PostgresServer

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def served(kafka: EmbeddedBroker, pg: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    sc = Scenario(kafka, pg, tmp_path_factory.mktemp("receipt"), register_stations="registered")
    with sc.db.unit() as s:
        register_seen(s, ["S1", "S2"], datetime.now(UTC))
    sc.start_worker()
    sc.wait_for(lambda: live(read_adverts(kafka.bootstrap, sc.settings.topic_reports)), timeout=90)
    yield sc
    sc.close()


def _pending(sc: Scenario) -> int:
    with sc.db.read() as s:
        return int(s.execute(select(func.count()).select_from(PendingReport)).scalar_one())


def _end_offsets(sc: Scenario) -> int:
    from kafka import KafkaConsumer, TopicPartition

    consumer = open_client(KafkaConsumer, bootstrap_servers=sc.settings.bootstrap_servers(), group_id=None)
    try:
        topic = sc.settings.topic_reports
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        return sum(consumer.end_offsets(tps).values())
    finally:
        consumer.close()


def _push(sc: Scenario, path: Path, *extra: str) -> int:
    from stream.cli.main import main

    assert sc.settings.broker_url is not None
    return main(["push", str(path), "--broker", sc.settings.broker_url, "--topic", sc.settings.topic_reports,
                 *extra])


def _day(stations: int, n: int, seed: int) -> dict[str, list[dict[str, object]]]:
    """A generated day whose report ids are this test's own (the module's tests share one ledger)."""
    return {st: [r | {"report_id": f"t{seed}-{r['report_id']}"} for r in rows]
            for st, rows in day_of_reports(stations, n, seed=seed).items()}


def _csv(tmp_path: Path, name: str, rows: list[dict[str, object]]) -> Path:
    path = tmp_path / name
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_a_file_of_another_spec_is_refused_before_anything_is_sent(served: Scenario, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "crime-global.toml"
    text = resolve_spec_path(spec_ref()).read_text()
    other.write_text(text.replace('id_column = "report_id"', 'id_column = "report_id"\nid_scope = "global"'))
    path = _csv(tmp_path, "reports.csv", _day(1, 30, 21)["S1"])
    before = _end_offsets(served)
    code = _push(served, path, "--station", "S1", "--spec", str(other))
    captured = capsys.readouterr()
    assert code == 2
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, captured.err
    assert "runs spec 'crime-reports'" in errors[0] and "nothing was sent" in errors[0]
    assert "sent" not in captured.out
    assert _end_offsets(served) == before


def test_the_receipt_counts_accepted_and_dead_lettered_reports(served: Scenario, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    day = _day(3, 40, 22)  # S3 is not registered: the worker dead-letters its reports
    rows = [r for station in ("S1", "S2", "S3") for r in day[station]]
    before = _pending(served)
    code = _push(served, _csv(tmp_path, "three.csv", rows), "--spec", spec_ref())
    out = capsys.readouterr().out
    assert code == 1, out
    assert "sent 120 report(s), rejected 0" in out
    assert "receipt: 80 of 120 report(s) accepted by the worker" in out
    assert "receipt: 40 dead-lettered by the worker:" in out and "40 x unknown-station" in out
    assert "anonstream stations add" in out and "re-pushing is idempotent" in out
    assert "not ingested" not in out
    assert _pending(served) == before + 80


def test_a_clean_push_is_confirmed_and_pushing_it_again_changes_nothing(served: Scenario, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = _csv(tmp_path, "s1.csv", _day(1, 50, 23)["S1"])
    before = _pending(served)
    assert _push(served, path, "--station", "S1", "--spec", spec_ref()) == 0
    out = capsys.readouterr().out
    assert "worker(s) serve this topic" in out and "spec 'crime-reports'" in out
    assert "receipt: 50 of 50 report(s) accepted by the worker" in out
    assert "dead-lettered" not in out and "not ingested" not in out
    assert _pending(served) == before + 50
    # the same file again: the ledger already holds every report (by fingerprint), so nothing is added
    assert _push(served, path, "--station", "S1", "--spec", spec_ref()) == 0
    assert "receipt: 50 of 50 report(s) accepted" in capsys.readouterr().out
    assert _pending(served) == before + 50


def test_no_wait_sends_without_waiting_for_the_receipt(served: Scenario, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = _csv(tmp_path, "s2.csv", _day(1, 10, 24)["S1"])
    assert _push(served, path, "--station", "S1", "--spec", spec_ref(), "--no-wait") == 0
    out = capsys.readouterr().out
    assert "sent 10 report(s)" in out and "not waiting for the worker's receipt" in out and "receipt:" not in out
