"""How a worker schedules due windows: one claim per free release slot, released in the background,
each release published exactly once, windows shared between workers (real SQLite ledger, no broker).

Releases run in child processes (the default) unless a test says otherwise; a test that patches the
orchestrator in this process releases in threads."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import select

import migrations
from db import Database
from db.models import Window
from db.windows import WindowPolicy
from stream.config.privacy import StreamPrivacy
from stream.config.settings import Settings
from stream.io.specs import load_schema
from stream.testing.reports import day_of_reports, spec_ref
from stream.worker.service import WorkerService


class Recorder:
    """A producer stand-in that records what would be sent (topic, key, value)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes]] = []

    async def send(self, topic: str, key: bytes | None, value: bytes) -> Any:
        self.sent.append((topic, key, value))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


def _setup(tmp_path: Path, concurrency: int) -> tuple[Settings, Database]:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrations.upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, spec=spec_ref(),
                        privacy=StreamPrivacy(k=5, engine_params={"time_limit": 0.2}), windows=WindowPolicy(cap=60),
                        fingerprint_key=SecretStr("scheduling-test-key"), release_concurrency=concurrency)
    return settings, Database(url)


@pytest.fixture
def make_service() -> Iterator[Callable[[Settings, Database, str], WorkerService]]:
    """WorkerServices that are closed (release processes stopped) after the test."""
    made: list[WorkerService] = []

    def make(settings: Settings, db: Database, worker: str) -> WorkerService:
        made.append(WorkerService(settings, db, load_schema(settings.spec), worker=worker))
        return made[-1]

    yield make
    for service in made:
        service.close()


def _claims(db: Database) -> Counter[str | None]:
    with db.read() as s:
        return Counter(s.execute(select(Window.claimed_by).where(Window.count > 0)).scalars())


@pytest.mark.parametrize("processes", [True, False])
def test_a_worker_claims_one_window_per_free_slot_and_workers_share_them(
        tmp_path: Path, make_service: Callable[[Settings, Database, str], WorkerService], processes: bool) -> None:
    settings, db = _setup(tmp_path, concurrency=2)
    settings = settings.with_updates(release_processes=processes)
    first = make_service(settings, db, "w1")
    second = make_service(settings, db, "w2")
    out = Recorder()
    reports = day_of_reports(3, 60, seed=5)  # three stations, each window full (cap 60) and due

    async def scenario() -> None:
        raw: list[bytes | None] = [json.dumps(r).encode() for rows in reports.values() for r in rows]
        await first.handle_batch(raw, out.send)
        await first.tick(out.send)
        assert _claims(db)["w1"] == 2, "two free slots: exactly two windows claimed"
        assert _claims(db)[None] == 1, "the third due window is left for a worker with a free slot"
        await second.tick(out.send)
        assert _claims(db)["w2"] == 1
        await first.drain()
        await second.drain()
        await first.tick(out.send)  # nothing left to claim or re-publish
        await second.tick(out.send)

    asyncio.run(scenario())
    manifests = Counter(key for topic, key, _ in out.sent if topic == settings.topic_releases)
    assert len(manifests) == 3 and set(manifests.values()) == {1}, "each release published exactly once"
    records = Counter(key for topic, key, _ in out.sent if topic == settings.topic_anonymized)
    for key, n in records.items():
        manifest = next(json.loads(v) for t, k, v in out.sent if t == settings.topic_releases and k == key)
        assert n == manifest["records"]
    with db.read() as s:
        assert set(s.execute(select(Window.state).where(Window.count > 0)).scalars()) == {"released"}


def test_an_ingested_batch_and_a_freed_slot_wake_the_loop(
        tmp_path: Path, make_service: Callable[[Settings, Database, str], WorkerService]) -> None:
    settings, db = _setup(tmp_path, concurrency=1)
    service = make_service(settings, db, "w1")
    out = Recorder()
    reports = day_of_reports(2, 60, seed=6)

    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        await service.handle_batch([json.dumps(r).encode() for rows in reports.values() for r in rows], out.send)
        started = loop.time()
        await service.wait_tick(60.0)  # an ingested batch may have filled a window: tick now
        assert loop.time() - started < 60.0
        await service.tick(out.send)
        assert _claims(db)["w1"] == 1
        started = loop.time()
        await service.wait_tick(60.0)  # returns when the running release frees its slot, not after 60 s
        waited = loop.time() - started
        await service.tick(out.send)
        await service.drain()
        return waited

    waited = asyncio.run(scenario())
    assert waited < 60.0
    assert _claims(db)["w1"] == 2
    assert sum(1 for topic, _k, _v in out.sent if topic == settings.topic_releases) == 2


def test_a_batch_that_fills_or_opens_no_window_leaves_the_loop_asleep(
        tmp_path: Path, make_service: Callable[[Settings, Database, str], WorkerService]) -> None:
    """Each tick reads the windows, watermarks, batches and claims: a batch wakes the loop only when it
    filled or opened a window (the only ways a batch makes one due); time-based closes wait for the tick."""
    settings, db = _setup(tmp_path, concurrency=1)
    settings = settings.with_updates(release_processes=False)  # nothing is released here
    service = make_service(settings, db, "w1")
    out = Recorder()
    rows = day_of_reports(1, 50, seed=8)["S1"]  # one station, one day: one window (cap 60)

    async def scenario() -> list[bool]:
        woken = []
        for part in (rows[:30], rows[30:45], rows[45:50]):
            service._wake.clear()
            await service.handle_batch([json.dumps(r).encode() for r in part], out.send)
            woken.append(service._wake.is_set())
        return woken

    assert asyncio.run(scenario()) == [True, False, False]  # opened; then 45 and 50 of 60
    with db.read() as s:
        assert [w.count for w in s.execute(select(Window)).scalars()] == [50]


@pytest.mark.parametrize("processes", [True, False])
def test_the_first_batch_warms_the_engine_up_without_releasing_anything(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        make_service: Callable[[Settings, Database, str], WorkerService], processes: bool) -> None:
    settings, db = _setup(tmp_path, concurrency=1)
    settings = settings.with_updates(window_max_reports=10_000, release_processes=processes)  # nothing falls due
    service = make_service(settings, db, "w1")
    out = Recorder()
    rows = day_of_reports(1, 150, seed=7)["S1"]

    async def scenario() -> None:
        raw: list[bytes | None] = [json.dumps(r).encode() for r in rows]
        await service.handle_batch(raw, out.send)
        assert service._warm_up is not None
        await service._warm_up
        await service.tick(out.send)
        await service.drain()

    with caplog.at_level("INFO"):
        asyncio.run(scenario())
    warmed = [r for r in caplog.records if "warmed up" in r.getMessage()]
    assert warmed and (not processes or "in 1 of 1 release processes" in warmed[0].getMessage())
    assert not any(str(row["name"]) in r.getMessage() for r in caplog.records for row in rows[:20])
    # nothing released: the only message is the worker's advert of its spec (stream/worker/receipts.py)
    assert [topic for topic, _key, _value in out.sent if not topic.endswith(".workers")] == []
    with db.read() as s:
        assert set(s.execute(select(Window.state).where(Window.count > 0)).scalars()) == {"open"}


def test_a_slot_frees_once_the_release_is_verified_not_once_it_is_published(
        tmp_path: Path, make_service: Callable[[Settings, Database, str], WorkerService]) -> None:
    """Storing and publishing do not hold a release slot: the next window is anonymized meanwhile
    (in threads, so the test can hold the ledger write)."""
    settings, db = _setup(tmp_path, concurrency=1)
    service = make_service(settings.with_updates(release_processes=False), db, "w1")
    out = Recorder()
    reports = day_of_reports(2, 60, seed=8)  # two full windows, one slot
    gate, storing = threading.Event(), threading.Event()
    store = service.orchestrator.repo.store

    def gated_store(*args: Any, **kwargs: Any) -> bool:
        storing.set()
        assert gate.wait(30), "the test never opened the gate"
        return store(*args, **kwargs)

    # the store is wrapped for this one test, to hold the publish step (mypy refuses assigning to a method)
    service.orchestrator.repo.store = gated_store  # type: ignore[method-assign]

    async def scenario() -> None:
        await service.handle_batch([json.dumps(r).encode() for rows in reports.values() for r in rows], out.send)
        await service.tick(out.send)
        assert _claims(db)["w1"] == 1, "one slot: one window claimed"
        assert await asyncio.to_thread(storing.wait, 30), "the first release never reached the ledger write"
        await service.wait_tick(30.0)  # woken by the freed slot while the first release waits to be stored
        await service.tick(out.send)
        assert _claims(db)["w1"] == 2, "the slot was free again before the first release was stored"
        assert not any(t == settings.topic_releases for t, _k, _v in out.sent), "nothing published yet"
        gate.set()
        await service.drain()
        await service.tick(out.send)

    try:
        asyncio.run(scenario())
    finally:
        gate.set()
    manifests = Counter(key for topic, key, _ in out.sent if topic == settings.topic_releases)
    assert len(manifests) == 2 and set(manifests.values()) == {1}, "each release published exactly once"
    with db.read() as s:
        assert set(s.execute(select(Window.state).where(Window.count > 0)).scalars()) == {"released"}
