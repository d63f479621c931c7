"""One worker serving several feeds: a :class:`~stream.worker.service.WorkerService` per feed, chosen by input topic.

Each feed keeps its own validator (spec), orchestrator (engine, privacy parameters, window policy),
release slots and output topics; the fleet only routes and fans out. The metrics registry is shared,
with a ``feed`` label on the per-release series. Without a pipelines file the fleet has one service,
the ``default`` feed, and the worker behaves exactly as a single-feed worker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from db import Database
from stream.config.feeds import feeds
from stream.config.settings import Settings
from stream.io.specs import load_schema
from stream.worker.metrics import WorkerMetrics
from stream.worker.service import SendFn, WorkerService

log = logging.getLogger(__name__)


class Fleet:
    """The feeds served by one worker process, by input topic."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings, self.db = settings, db
        self.metrics = WorkerMetrics(db, self._pids)
        self.services: dict[str, WorkerService] = {}  # input topic -> the feed's service
        for fs in feeds(settings):
            self.services[fs.topic_reports] = WorkerService(fs, db, load_schema(fs.spec), metrics=self.metrics)
        if len(self.services) > 1:
            log.info("serving %d feeds: %s", len(self.services),
                     ", ".join(f"{s.settings.feed} <- {t}" for t, s in self.services.items()))

    def _pids(self) -> list[int]:
        out: list[int] = []
        for service in getattr(self, "services", {}).values():
            pids = getattr(service.releases, "pids", None)
            out += list(pids()) if pids is not None else []
        return out

    @property
    def inputs(self) -> dict[str, str]:
        """Input topic -> feed name."""
        return {topic: s.settings.feed for topic, s in self.services.items()}

    def service_for(self, topic: str) -> WorkerService:
        return self.services[topic]

    async def start_releases(self) -> None:
        """Start every feed's release processes' fork server (:meth:`ReleasePool.start`); a failure is logged
        and left to the first release, which starts it again."""
        try:
            await asyncio.gather(*(s.releases.start() for s in self.services.values()))
        except Exception as exc:
            log.warning("could not start the release processes ahead of the first release: %s", exc)

    async def tick(self, send: SendFn) -> None:
        """One tick of every feed (each claims and publishes its own windows only)."""
        await asyncio.gather(*(s.tick(send) for s in self.services.values()))

    async def wait_tick(self, interval: float) -> None:
        """Until the first feed wants a tick (a freed release slot, new input) or ``interval`` passes."""
        waits = [asyncio.ensure_future(s.wait_tick(interval)) for s in self.services.values()]
        _done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for w in pending:
            w.cancel()

    async def record_partitions(self, assigned: Iterable[Any]) -> None:
        """Record each feed's assigned input partitions (``assigned``: faust topic-partitions)."""
        tps = list(assigned)
        for topic, service in self.services.items():
            await service.record_partitions([tp.partition for tp in tps if tp.topic == topic])

    def set_send_many(self, send_many: Any) -> None:
        for service in self.services.values():
            service.send_many = send_many

    def close(self) -> None:
        """The worker stops: each feed's release processes stop, the windows they were releasing are handed back
        (the next worker releases them at once, not after their lease) and its heartbeat row is marked stopped."""
        for service in self.services.values():
            service.close()
            for window_id in sorted(service.leases.closing):
                service.leases.hand_back(window_id)
            service.heartbeat.stopped()
