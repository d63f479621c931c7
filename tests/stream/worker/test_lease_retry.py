"""A window whose release failed is retried by its own worker at once, not after its lease runs out."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from db.models import Window
from stream.io.specs import load_schema
from stream.testing.reports import day_of_reports
from stream.worker.pool import ReleasePool
from stream.worker.service import WorkerService
from tests.stream.worker.test_release_scheduling import Recorder, _setup


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[WorkerService]:
    """A worker service (releases in child processes) with a lease of an hour: if it did not give a
    failed claim up itself, nobody would retry the window within the test."""
    settings, db = _setup(tmp_path, concurrency=1)
    settings = settings.with_updates(claim_lease_s=3600.0, idle_timeout_s=0.5)
    service = WorkerService(settings, db, load_schema(settings.spec), worker="w1")
    yield service
    service.close()


@pytest.mark.slow
def test_a_release_whose_process_died_is_retried_at_once(worker: WorkerService,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    service, settings, db = worker, worker.settings, worker.db
    out = Recorder()
    reports = day_of_reports(1, 120, seed=3)  # two full windows (cap 60): enough to warm the engine up

    async def scenario() -> None:
        await service.handle_batch([json.dumps(r).encode() for rows in reports.values() for r in rows], out.send)
        assert service._warm_up is not None
        await service._warm_up  # the release processes exist now
        assert isinstance(service.releases, ReleasePool) and service.releases._executor is not None
        for proc in list(service.releases._executor._processes.values()):  # a real fault: SIGKILL them
            proc.kill()
            proc.join()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            await service.tick(out.send)
            await service.drain()
            with db.read() as s:
                if set(s.execute(select(Window.state).where(Window.count > 0)).scalars()) == {"released"}:
                    return
            await asyncio.sleep(0.2)
        raise AssertionError("the failed window was not retried")

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    assert any("failed; retrying in 0s" in r.getMessage() for r in caplog.records), "the first release failed"
    manifests = Counter(key for topic, key, _ in out.sent if topic == settings.topic_releases)
    assert len(manifests) == 2 and set(manifests.values()) == {1}
