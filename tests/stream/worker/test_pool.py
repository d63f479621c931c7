"""Release processes: a window released in a child is the one a thread would release, the slot is
signalled at verification, and a worker killed hard takes its release processes with it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import SecretStr
from sqlalchemy import select

import migrations
from db import Database
from db.models import Release, Window
from db.windows import WindowPolicy
from stream.config.privacy import StreamPrivacy
from stream.config.settings import Settings
from stream.io.specs import load_schema
from stream.ops.runtime import ROOT
from stream.testing.reports import day_of_reports, spec_ref
from stream.worker.pool import Encoded, ReleasePool
from stream.worker.service import WorkerService


def _settings(tmp_path: Path) -> Settings:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrations.upgrade(url)
    return Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(),
                    privacy=StreamPrivacy(k=5, engine_params={"time_limit": 0.2}), windows=WindowPolicy(cap=60),
                    fingerprint_key=SecretStr("pool-test-key"), release_concurrency=1)


def test_a_child_releases_the_claimed_window_and_signals_verification(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    db = Database(settings.db_url())
    service = WorkerService(settings.with_updates(release_processes=False), db, load_schema(settings.spec), "w1")
    pool = ReleasePool(settings, "w1", 1)
    verified: list[float] = []
    try:
        async def scenario() -> tuple[str | None, Encoded | None]:
            rows = day_of_reports(1, 60, seed=3)["S1"]
            await service.handle_batch([json.dumps(r).encode() for r in rows], _no_send)
            (wid, why), = service.orchestrator.due(datetime.now(UTC))
            window = service.orchestrator.claim(wid, why, datetime.now(UTC))
            assert window is not None
            return await pool.release(window, datetime.now(UTC), lambda: verified.append(time.monotonic()))

        rid, encoded = asyncio.run(scenario())
    finally:
        pool.close()
    assert rid is not None and len(verified) == 1
    assert encoded is not None
    manifest, records = encoded
    assert json.loads(manifest)["release_id"] == rid and len(records) == json.loads(manifest)["records"]
    with db.read() as s:
        assert s.execute(select(Release.state).where(Release.id == rid)).scalar_one() == "stored"
        assert s.execute(select(Window.state).where(Window.release_id == rid)).scalar_one() == "released"


async def _no_send(topic: str, key: bytes | None, value: bytes) -> asyncio.Future[None]:
    raise AssertionError("nothing is dead-lettered here")


CHILD = """
import asyncio, os, sys
from stream.worker.pool import ReleasePool
from stream.config.settings import Settings
pool = ReleasePool(Settings.model_validate_json(sys.argv[1]), "w1", 2)
asyncio.run(pool.warm_up([]))
print(" ".join(str(pid) for pid in pool._pool()._processes), flush=True)
os._exit(9)  # no shutdown: like a worker killed hard
"""


def test_release_processes_exit_when_their_worker_dies_hard(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    out = subprocess.run([sys.executable, "-c", CHILD, settings.model_dump_json()], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 9, out.stderr
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 15
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in _state(p)]
    assert not alive, f"release processes {alive} outlived their worker"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_starting_a_child_never_holds_up_the_event_loop(tmp_path: Path) -> None:
    """Submitting to the pool may start a child, and a child's start waits for the fork server (seconds
    on its first start, under load): the submission runs in a thread, so the loop keeps serving
    (ingest) meanwhile. Here the start is held until the loop has shown it is free."""
    import threading
    from concurrent.futures import Future

    release_start = threading.Event()

    class HeldExecutor:
        def submit(self, fn: Callable[..., object], *args: object) -> Future[object]:
            assert release_start.wait(timeout=120), "the loop never ran while a child was starting"
            done: Future[object] = Future()
            done.set_result(fn(*args))
            return done

    pool = ReleasePool(_settings(tmp_path), "w1", 1)
    # a held executor stands in for the process pool: it runs the child's work in this process when released
    pool._pool_locked = lambda: HeldExecutor()  # type: ignore[method-assign,assignment,return-value]

    async def scenario() -> object:
        submitted = asyncio.ensure_future(pool._submit(abs, -3))
        for _ in range(20):  # the loop turns over while the child is still starting
            await asyncio.sleep(0)
        assert not submitted.done()
        release_start.set()
        return await submitted

    assert asyncio.run(scenario()) == 3


def _session_members(sid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[4]) == sid:
                    members.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return members


def test_a_child_started_while_the_worker_stops_is_stopped_with_it(tmp_path: Path) -> None:
    """Ctrl-C while a release's submission is still starting its child (the fork server's first start takes
    seconds): close() waits for that child to be registered and stops it. Before, close() listed the
    children first, so the new one outlived the worker and printed a traceback, its semaphores removed."""
    from stream.ops.runtime import wait_until

    script = textwrap.dedent(f"""
        import threading
        from multiprocessing import forkserver
        from stream.worker.pool import ReleasePool
        from stream.config.settings import Settings
        s = Settings(data_dir={str(tmp_path)!r}, fingerprint_key="k", broker_url="kafka://127.0.0.1:1")
        pool = ReleasePool(s, "w", 2)
        threading.Thread(target=pool._submit_locked, args=(abs, 1), daemon=True).start()
        while forkserver._forkserver._forkserver_pid is None:  # the submission is starting the fork server
            pass
        pool.close()
        print("closed", flush=True)
    """)
    out = tmp_path / "out.txt"
    with out.open("w") as fh:
        proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
        assert proc.wait(timeout=180) == 0, out.read_text()
    assert wait_until(lambda: not _session_members(proc.pid), timeout=120), "a release process outlived close()"
    text = out.read_text()
    assert "closed" in text and "Traceback" not in text, text
