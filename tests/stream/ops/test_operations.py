"""Operations on the real broker and PostgreSQL: /metrics equals the ledger, JSON logs carry no identifier
or QI value (even with -v), /ready follows PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from stream.ops.broker import EmbeddedBroker, free_port
from stream.ops.runtime import ROOT, spawn_worker, wait_until
from stream.station.simulate import bad_reports
from stream.testing.reports import day_of_reports
from stream.testing.scenario import Scenario
from stream.testing.services import PostgresServer

pytestmark = [pytest.mark.broker, pytest.mark.postgres]


def _get(url: str, timeout: float = 10.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return 0, b""


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _total(samples: dict[Any, float], name: str, **labels: str) -> float:
    return sum(v for (n, lab), v in samples.items()
               if n == name and all(dict(lab).get(k) == want for k, want in labels.items()))


def _spawn_verbose_json(sc: Scenario, port: int, err_path: Path) -> subprocess.Popen[bytes]:
    """`anonstream -v run` with JSON logs on stderr (stdout, the start-up summary, is not a log)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}
    env.update(sc.settings.with_updates(web_port=port, log_format="json").env())
    env["PYTHONPATH"] = str(ROOT)
    with err_path.open("wb") as err:
        return subprocess.Popen([sys.executable, "-m", "stream.cli.main", "-v", "run", "--no-migrate"], env=env,
                                stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_metrics_equal_the_ledger_and_json_logs_carry_no_identifier(kafka: EmbeddedBroker, pg: PostgresServer,
                                                                    tmp_path: Path) -> None:
    """One run on the real broker and PostgreSQL, with -v (debug) and JSON logs: /metrics counters equal the
    ledger's counts; every log line parses, and none carries an identifier or QI value of the input (the Kafka
    clients stay at WARNING, SQLAlchemy never logs parameters)."""
    sc = Scenario(kafka, pg, tmp_path)
    port = free_port()
    err_path = tmp_path / "worker.err"
    try:
        sc.workers.append(_spawn_verbose_json(sc, port, err_path))
        reports = day_of_reports(2, 120, seed=3)
        dupes = [(st, json.dumps(rs[0]).encode()) for st, rs in reports.items()]  # the same report again
        bad = [(st, raw) for st, rs in reports.items() for raw in bad_reports(st, rs[0])]
        sc.push(reports, dupes + bad)
        acc = sc.wait_settled(timeout=180)
        assert acc["releases_published"] >= 2 and acc.get("dlq", 0) > 0 and acc.get("duplicate", 0) > 0

        def scraped() -> dict[Any, float]:
            status, body = _get(f"http://127.0.0.1:{port}/metrics")
            assert status == 200
            return _samples(body.decode())

        # the last release is marked published a moment before the worker counts it
        assert wait_until(lambda: _total(scraped(), "anonstream_releases_published_total")
                          == acc["releases_published"], timeout=30)
        m = scraped()
        pool = sum(acc.get(k, 0) for k in ("pending", "released", "suppressed", "blocked"))
        assert _total(m, "anonstream_reports_ingested_total") == pool
        assert _total(m, "anonstream_reports_rejected_total") == acc["dlq"]
        assert _total(m, "anonstream_dlq_sent_total") == acc["dlq"]
        assert _total(m, "anonstream_reports_duplicates_total") == acc.get("duplicate", 0) + acc.get("correction", 0)
        # the ledger's own gauges, read at scrape time, agree too
        assert _total(m, "anonstream_releases", state="published") == acc["releases_published"]
        assert _total(m, "anonstream_ledger_counted", kind="dlq") == acc["dlq"]
        assert _total(m, "anonstream_ledger_reports", state="released") == acc["released"]
        for stage in ("claim", "sample", "anonymize", "verify", "store", "publish"):
            assert _total(m, "anonstream_release_stage_seconds_count", stage=stage) >= 1, stage
        assert _total(m, "anonstream_last_release_k") >= sc.settings.privacy.k
        assert 0 <= _total(m, "anonstream_last_release_information_loss") <= 1
        # the last release's prosecutor risk (manifest privacy.risk): at most 1/k, the average below the highest
        assert 0 < _total(m, "anonstream_last_release_max_risk") <= 1 / sc.settings.privacy.k
        assert 0 < _total(m, "anonstream_last_release_avg_risk") <= _total(m, "anonstream_last_release_max_risk")
        status, body = _get(f"http://127.0.0.1:{port}/ready")
        assert status == 200 and json.loads(body)["ready"] is True
        assert _total(m, "anonstream_release_process_memory_bytes") > 0
    finally:
        sc.close()
    lines = err_path.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    assert len(records) > 5 and all({"time", "level", "logger", "message"} <= set(r) for r in records)
    assert any(r.get("release_id") for r in records)
    assert not any(r["logger"].startswith(("kafka", "aiokafka")) and r["level"] in ("DEBUG", "INFO")
                   for r in records)
    text = "\n".join(lines)
    values = set()
    for rows in reports.values():
        for r in rows:
            values |= {str(r[c]) for c in ("report_id", "name", "dob", "suburb", "offence")}
    leaked = sorted(v for v in values if v and v in text)
    assert not leaked, leaked[:10]


def _pg_stop(server: PostgresServer) -> None:
    server._run(["pg_ctl", "-D", str(server.data), "-m", "fast", "-w", "stop"])


def _pg_start(server: PostgresServer) -> None:
    opts = f"-p {server.port} -k {server.root} -c listen_addresses=127.0.0.1 -c fsync=off"
    server._run(["pg_ctl", "-D", str(server.data), "-o", opts, "-l", str(server.root / "log"), "-w", "start"])


@pytest.mark.slow
def test_readiness_follows_postgresql(kafka: EmbeddedBroker, tmp_path: Path) -> None:
    own = PostgresServer()  # its own cluster: stopping it disturbs no other test
    sc = None
    try:
        sc = Scenario(kafka, own, tmp_path, release_processes=False)
        port = free_port()
        sc.workers.append(spawn_worker(sc.settings.with_updates(web_port=port), tmp_path / "worker-0.log"))
        ready = f"http://127.0.0.1:{port}/ready"
        assert wait_until(lambda: _get(ready)[0] == 200, timeout=90), sc.logs()[-2000:]
        sc.db.dispose()
        log_before = len(sc.logs().splitlines())
        _pg_stop(own)
        outage = time.monotonic()
        assert wait_until(lambda: _get(ready)[0] == 503, timeout=60), sc.logs()[-2000:]
        state = json.loads(_get(ready)[1])
        assert state["ready"] is False and state["broker"] == "ok" and "database" in state["database"]
        metrics = f"http://127.0.0.1:{port}/metrics"
        # the outage under load: reports keep arriving and every window tick fails; the log must not flood
        sc.push(day_of_reports(2, 30, seed=77))

        def failures() -> float:
            status, body = _get(metrics)
            return _total(_samples(body.decode()), "anonstream_failures_total") if status == 200 else 0.0

        assert wait_until(lambda: failures() >= 40, timeout=300), sc.logs()[-2000:]
        elapsed = time.monotonic() - outage
        samples = _samples(_get(metrics)[1].decode())
        kinds = {dict(lab)["kind"] for (n, lab), v in samples.items() if n == "anonstream_failures_total" and v}
        during = sc.logs().splitlines()[log_before:]
        # each failing kind logs its first failure, then at most one line per 30 s (stream/worker/throttle.py)
        assert len(during) <= len(kinds) * (2 + elapsed / 30) + 6, "\n".join(during[-40:])
        assert not any("Traceback" in line for line in during), "\n".join(during[-40:])
        assert "window_tick" in kinds
        _pg_start(own)
        assert wait_until(lambda: _get(ready)[0] == 200, timeout=60), sc.logs()[-2000:]
        assert sc.workers[0].poll() is None
    finally:
        if sc is not None:
            sc.close()
        own.stop()
