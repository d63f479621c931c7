"""Ctrl-C on `anonstream run` stops it cleanly: one line, no traceback, exit 0, its broker stopped after it.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group; the embedded broker runs in a
session of its own, so the worker stops first and then stops its broker (before, the broker died first
and the worker printed tracebacks and "broker exited, exit code 3")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from stream.ops.locate import pid_alive
from stream.ops.runtime import ROOT, wait_until

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
    assert code in (0, 130), after
    assert "Traceback" not in after and "CRITICAL" not in after and " ERROR " not in after, after
    stopped = [line for line in after.splitlines() if line.startswith("anonstream run: stopped")]
    assert len(stopped) == 1, after
    assert "pending" in stopped[0]
    assert wait_until(lambda: not any(pid_alive(c) for c in children), timeout=30), "the broker outlived run"
