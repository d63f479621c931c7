"""Ctrl-C on `anonstream run` stops it cleanly: one line, no traceback, exit 0, its broker stopped after it.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group; the embedded broker runs in a
session of its own, so the worker stops first and then stops its broker (before, the broker died first
and the worker printed tracebacks and "broker exited, exit code 3"). The release processes are in the
group too: they ignore SIGINT and the worker stops them, handing back the window they were releasing
(before, one died of the SIGINT mid-release and the worker printed `interrupted` and exited 130)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from stream.ops.locate import pid_alive
from stream.ops.runtime import ROOT, wait_until

NOISE = ("Traceback", "CRITICAL", " ERROR ", "interrupted", "\x1b[", "\b", "leaked semaphore", "Missing sensor state")

pytestmark = [pytest.mark.broker, pytest.mark.slow]


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_ctrl_c_stops_run_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}
    env.update({"ANONSTREAM_HOME": str(tmp_path / "var"), "PYTHONPATH": str(ROOT)})
    out = tmp_path / "run.out"
    with out.open("wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "stream.cli.main", "run", "--web-port", "0"], cwd=tmp_path,
                                env=env, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)  # a process group of its own, as a terminal gives
    try:
        assert wait_until(lambda: "assigned input partitions" in out.read_text() or proc.poll() is not None,
                          timeout=180), out.read_text()
        assert proc.poll() is None, out.read_text()
        children = _children(proc.pid)
        assert children, "the embedded broker runs as a child of run"
        before = out.read_text()
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    after = out.read_text()[len(before):]
    assert code == 0, after
    assert not [n for n in NOISE if n in after], after
    stopped = [line for line in after.splitlines() if line.startswith("anonstream run: stopped")]
    assert len(stopped) == 1, after
    assert "pending" in stopped[0]
    assert wait_until(lambda: not any(pid_alive(c) for c in children), timeout=30), "the broker outlived run"


def _closing(url: str) -> list[tuple[str, str | None, object]]:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT id, claimed_by, lease_until FROM windows WHERE state = 'closing'")).all()
    finally:
        engine.dispose()
    return [tuple(r) for r in rows]


def test_ctrl_c_on_a_busy_worker_hands_the_release_back_and_status_sees_it_stopped(tmp_path: Path) -> None:
    """A release in flight (a slow engine) when Ctrl-C comes: exit 0 with one line and nothing else, the window
    handed back (its claim ended, so the next worker takes it at once), and `status` says at once that no worker
    runs (the heartbeat row is marked stopped), where it said "HEALTHY: worker running" for a minute."""
    from datetime import UTC, datetime

    home = tmp_path / "var"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}
    env.update({"ANONSTREAM_HOME": str(home), "PYTHONPATH": str(ROOT), "ANONSTREAM_ENGINE": "pbg-ea",
                "ANONSTREAM_ENGINE_PARAMS": '{"iterations": 1000000, "prune": false}'})
    reports = tmp_path / "reports.csv"
    subprocess.run([sys.executable, "-m", "stream.cli.main", "generate", "crime-reports", "--stations", "1",
                    "--per-day", "300", "--seed", "3", "--out", str(reports)], env=env, check=True,
                   capture_output=True)
    out = tmp_path / "run.out"
    with out.open("wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "stream.cli.main", "run", "--web-port", "0"], cwd=tmp_path,
                                env=env, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    url = f"sqlite:///{home / 'anonstream.db'}"
    try:
        assert wait_until(lambda: "assigned input partitions" in out.read_text() or proc.poll() is not None,
                          timeout=180), out.read_text()
        push = subprocess.run([sys.executable, "-m", "stream.cli.main", "push", str(reports)], env=env,
                              capture_output=True, text=True, timeout=120)
        assert push.returncode == 0, push.stdout + push.stderr
        assert wait_until(lambda: bool(_closing(url)) or proc.poll() is not None, timeout=120), out.read_text()
        assert proc.poll() is None, out.read_text()
        before = out.read_text()
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C while the window is being released
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    after = out.read_text()[len(before):]
    assert code == 0, after
    assert not [n for n in NOISE if n in after], after
    assert len([line for line in after.splitlines() if line.startswith("anonstream run: stopped")]) == 1, after
    assert "handed back" in after, after
    now = datetime.now(UTC).replace(tzinfo=None)
    for _wid, _worker, lease in _closing(url):  # still to release, and claimable by the next worker now
        until = datetime.fromisoformat(str(lease)).replace(tzinfo=None)
        assert until <= now, (lease, now)
    status = subprocess.run([sys.executable, "-m", "stream.cli.main", "status"], env=env, capture_output=True,
                            text=True, timeout=60)
    assert status.returncode == 5, status.stdout + status.stderr
    assert status.stdout.startswith("ACTION NEEDED: no worker running") and "stopped cleanly" in status.stdout
