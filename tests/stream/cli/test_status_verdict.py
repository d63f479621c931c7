"""`anonstream status` gives the one verdict at once: a held window is 4 even with --wait, a worker whose process is
gone is 5 at once (its heartbeat row, never the broker's group), a configured or recorded broker that does not
answer is 3 within seconds and never "no broker configured"."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import migrations
from db import Database
from db.models import Window
from db.status import heartbeat
from stream.cli.main import main
from stream.ops.broker import free_port

HELD = "station:S1|2026-01-01T00:00:00Z|0"
REASON = "verification failed: average prosecutor risk is 0.2500, requirement avg_risk=0.2"


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Database]]:
    for key in [k for k in os.environ if k.startswith("ANONSTREAM_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ANONSTREAM_HOME", str(tmp_path / "var"))
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrations.upgrade(url)
    db = Database(url)
    yield url, db
    db.dispose()


def _beat(db: Database, pid: int, state: str = "running", host: str | None = None) -> None:
    heartbeat(db, "host:6066", datetime.now(UTC), [0], {"ingested": 0, "pid": pid, "host": host or socket.gethostname(),
                                                         "state": state})


def _hold(db: Database) -> None:
    now = datetime.now(UTC)
    with db.unit() as s:
        s.add(Window(id=HELD, key="station:S1", start=now - timedelta(days=1), end=now, state="held",
                     hold_reason=REASON, count=40, last_input_at=now, closed_at=now))


def test_wait_returns_4_at_once_on_a_held_window_with_advice_that_fits(ledger: tuple[str, Database],
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    url, db = ledger
    _beat(db, os.getpid())  # a live worker: this process
    _hold(db)
    t0 = time.monotonic()
    assert main(["status", "--wait", "300", "--database", url]) == 4
    assert time.monotonic() - t0 < 30  # not the 300 s wait: waiting does not release a held window
    out, err = capsys.readouterr()
    assert out.startswith(f"ACTION NEEDED: window {HELD} held") and "still busy" not in err
    assert "`ANONSTREAM_PRIVACY__K` to at least 5" in out and "restart the worker" in out and "raise k" not in out


def test_a_worker_whose_process_is_gone_is_5_at_once_and_a_stopped_one_says_so(ledger: tuple[str, Database],
        capsys: pytest.CaptureFixture[str]) -> None:
    url, db = ledger
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # a pid that ran on this host and is gone (its heartbeat row is only seconds old)
    _beat(db, proc.pid)
    assert main(["status", "--database", url]) == 5
    assert "its process is gone" in capsys.readouterr().out
    _beat(db, os.getpid())
    assert main(["status", "--database", url]) == 0
    assert capsys.readouterr().out.startswith("HEALTHY: worker running")
    _beat(db, os.getpid(), state="stopped")
    assert main(["status", "--wait", "300", "--database", url]) == 5
    assert "stopped cleanly" in capsys.readouterr().out
    _beat(db, 1, host="another-host")  # elsewhere: its pid is not checked, its fresh heartbeat counts
    assert main(["status", "--database", url]) == 0


def test_a_broker_that_does_not_answer_is_3_within_seconds(ledger: tuple[str, Database],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    url, db = ledger
    _beat(db, os.getpid())
    broker = f"kafka://127.0.0.1:{free_port()}"  # nothing listens there
    t0 = time.monotonic()
    assert main(["status", "--database", url, "--broker", broker]) == 3
    assert time.monotonic() - t0 < 5
    out = capsys.readouterr().out
    assert out.startswith(f"ACTION NEEDED: broker {broker} does not answer") and "no broker configured" not in out


def test_the_broker_the_instance_file_names_is_never_no_broker_configured(ledger: tuple[str, Database], tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    url, db = ledger
    _beat(db, os.getpid())
    broker = f"kafka://127.0.0.1:{free_port()}"
    home = tmp_path / "var"
    home.mkdir(parents=True)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    for run_pid in (os.getpid(), gone.pid):  # its `run` still running, or killed (the file stays behind)
        (home / "instance.json").write_text(json.dumps({"pid": run_pid, "broker_url": broker, "database_url": url}))
        assert main(["status"]) == 3
        out = capsys.readouterr().out
        assert f"broker {broker} does not answer" in out and "no broker configured" not in out
