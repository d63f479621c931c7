"""The broker dies while `anonstream push` runs: the receipt says how many reports were not ingested (the
memory-only broker lost what it had acknowledged), push exits 1 and says to push again; pushing the same
file again once the service is back puts every report in the ledger exactly once.

The broker here is the test's own (it is killed). The worker is paused (SIGSTOP) the moment it has
ingested its first batch and before the broker is killed, so some acknowledged reports are certainly
still unread when the broker's memory goes: no timing is assumed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import func, select

from db.models import PendingReport
from stream.ops.broker import EmbeddedBroker
from stream.ops.runtime import ROOT
from stream.station.advert import live, read_adverts
from stream.testing.reports import day_of_reports, spec_ref
from stream.testing.scenario import Scenario
from stream.testing.services import PostgresServer

pytestmark = [pytest.mark.broker, pytest.mark.postgres, pytest.mark.slow]
# Well above what a paused worker can hold unread, whatever the timing: its first batch (take_max 500), faust's
# stream buffer (4,096 events) and one fetch per partition (1 MiB, about 4,100 reports of ~254 bytes each).
# At 2 x 4,000 (about 1 MiB a station) one fetch could hold a whole station, and the test then failed.
ROWS = 2 * 12_000


def _pending(sc: Scenario) -> int:
    with sc.db.read() as s:
        return int(s.execute(select(func.count()).select_from(PendingReport)).scalar_one())


def _stopped(pid: int) -> bool:
    """The process is stopped (SIGSTOP): its state in /proc is T."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")


def _push(sc: Scenario, broker: EmbeddedBroker, path: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["ANONSTREAM_HOME"] = str(sc.workdir / "station")  # no ledger on the station's side
    return subprocess.Popen([sys.executable, "-m", "stream.cli.main", "push", str(path), "--broker", broker.url,
                             "--topic", sc.settings.topic_reports, "--spec", spec_ref(), "--wait", "60"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _serving(sc: Scenario, broker: EmbeddedBroker) -> None:
    sc.wait_for(lambda: live(read_adverts(broker.bootstrap, sc.settings.topic_reports)), timeout=90)


def test_a_broker_killed_mid_push_leaves_a_receipt_of_what_was_not_ingested(pg: PostgresServer, tmp_path: Path) -> None:
    day = day_of_reports(2, ROWS // 2, seed=31)
    path = tmp_path / "reports.csv"
    pd.DataFrame([r for rows in day.values() for r in rows]).to_csv(path, index=False)
    broker = EmbeddedBroker(log_file=tmp_path / "broker.log").start()
    sc = Scenario(broker, pg, tmp_path / "service", take_max=500)
    try:
        worker = sc.start_worker(broker_watch_s=1.0, broker_lost_exit_s=3.0, fault_point="stop-after-ingest")
        _serving(sc, broker)
        push = _push(sc, broker, path)
        sc.wait_for(lambda: _stopped(worker.pid), timeout=120)  # it froze itself after its first batch ...
        assert 0 < _pending(sc) < ROWS  # ... so it reads nothing more, whatever the machine's load
        assert broker.proc is not None
        broker.proc.kill()  # ... and the broker's memory, with every report it acknowledged, is gone
        broker.proc.wait()
        os.kill(worker.pid, signal.SIGCONT)
        out, err = push.communicate(timeout=240)
        assert worker.wait(timeout=120) == 3  # the worker stops: its broker is gone
        held = _pending(sc)

        assert push.returncode == 1, out + err
        accepted = re.search(r"receipt: (\d+) of (\d+) report\(s\) accepted by the worker", out)
        missing = re.search(r"receipt: (\d+) report\(s\) not ingested", out)
        assert accepted and missing, out
        n_accepted, n_valid, n_missing = int(accepted[1]), int(accepted[2]), int(missing[1])
        assert "dead-lettered" not in out
        assert n_accepted + n_missing == ROWS, out  # every report is either confirmed or reported missing
        assert n_accepted <= held < ROWS  # only what the ledger holds is confirmed; some were lost
        assert n_missing >= ROWS - held  # every report the ledger lacks is reported (and maybe a few it has)
        assert n_valid == ROWS
        assert "push the same file again" in out and "re-pushing is idempotent" in out
        assert "Traceback" not in err and "ERROR" not in err  # the broker's loss is told once, on stdout

        # the service comes back on a new broker; the same file pushed again: each report once in the ledger
        broker.stop()
        broker = EmbeddedBroker(log_file=tmp_path / "broker2.log").start()
        sc.start_worker(broker_url=broker.url)
        _serving(sc, broker)
        again = _push(sc, broker, path)
        out, err = again.communicate(timeout=300)
        assert again.returncode == 0, out + err
        assert f"receipt: {ROWS} of {ROWS} report(s) accepted" in out
        assert _pending(sc) == ROWS
    finally:
        sc.close()
        broker.stop()
