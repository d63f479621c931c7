"""A worker in the background: ``anonstream run --detach`` starts one, ``anonstream stop`` stops it.

The detached worker is ``anonstream run`` in a session of its own (a closed terminal or a Ctrl-C in it
does not reach it), configured through ``ANONSTREAM_*`` variables, its output in ``<data dir>/run.log``
and its pid in ``<data dir>/run.pid``. :func:`start_detached` returns once the worker answers ``/ready``
(its database and broker reachable), or with the log's last lines when it exited instead.
:func:`stop_worker` sends SIGTERM, the same clean stop as Ctrl-C, and waits until the process is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from stream.config.settings import Settings
from stream.ops.locate import pid_alive, read_state
from stream.ops.runtime import worker_env

PID_FILE, LOG_FILE = "run.pid", "run.log"


@dataclass(frozen=True)
class Started:
    pid: int
    log: Path
    ready: bool  # False: the worker exited before it was ready (see ``exit_code`` and the log)
    exit_code: int | None = None


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return int(resp.status) == 200
    except OSError:
        return False


def running_pid(settings: Settings) -> int | None:
    """The pid of this data folder's worker (detached, or ``run`` with its embedded broker), if alive."""
    home = settings.data_dir.resolve()
    with contextlib.suppress(OSError, ValueError):
        pid = int((home / PID_FILE).read_text().strip())
        if pid_alive(pid):
            return pid
    state = read_state(settings)
    recorded = state.get("pid") if state else None
    return recorded if isinstance(recorded, int) and pid_alive(recorded) else None


def start_detached(settings: Settings, timeout: float, progress: bool = True) -> Started:
    """Start ``anonstream run`` with ``settings`` in the background and wait (up to ``timeout`` s) for
    its ``/ready``. ``settings.web_port`` must be a concrete port."""
    home = settings.data_dir.resolve()
    home.mkdir(parents=True, exist_ok=True)
    log = home / LOG_FILE
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "stream.cli.main", "run"], env=worker_env(settings), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    (home / PID_FILE).write_text(f"{proc.pid}\n")
    url = f"http://{settings.web_host}:{settings.web_port}/ready"
    deadline, shown = time.monotonic() + timeout, time.monotonic()
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            return Started(proc.pid, log, False, code)
        if _ready(url):
            return Started(proc.pid, log, True)
        if progress and time.monotonic() - shown > 10:
            shown = time.monotonic()
            print(f"anonstream run: waiting for the worker to be ready (log {log}) …", file=sys.stderr, flush=True)
        time.sleep(0.5)
    return Started(proc.pid, log, False)


def stop_worker(settings: Settings, timeout: float) -> tuple[int | None, bool]:
    """SIGTERM this data folder's worker and wait for it: (pid or None if none ran, stopped in time)."""
    pid = running_pid(settings)
    if pid is None:
        return None, True
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap it if it is our own child
        time.sleep(0.2)
    gone = not pid_alive(pid)
    if gone:
        with contextlib.suppress(OSError):
            (settings.data_dir.resolve() / PID_FILE).unlink()
    return pid, gone


def log_tail(log: Path, lines: int = 15) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
