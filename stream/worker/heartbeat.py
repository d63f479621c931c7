"""The worker's heartbeat row (``worker_status``): alive, assigned partitions and counters, every 5 s.

The row's stats also carry the worker's ``host``, ``pid`` and ``state`` (``running``, or ``stopped``
once it exits cleanly: :meth:`Heartbeat.stopped`), so the verdict (stream/console/verdict.py) sees a
stopped worker at once and, on the same host, a killed one (its pid gone) without waiting for the
heartbeat to go stale. A write that fails (database down) never crashes the worker: partitions assigned during an outage
(a rebalance) are kept and written by the next beat that succeeds; failures are logged once per kind
and interval (:class:`stream.worker.throttle.FailureLog`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from datetime import UTC, datetime
from typing import Any

from db import Database
from stream.worker.throttle import FailureLog

log = logging.getLogger("stream.worker.service")
INTERVAL_S = 5.0


class Heartbeat:
    def __init__(self, db: Database, worker: str, stats: dict[str, Any], failures: FailureLog) -> None:
        self.db, self.worker, self.stats, self.failures = db, worker, stats, failures
        self._last = 0.0
        self._unsaved: list[int] | None = None  # assigned during a database outage: written by a later beat
        self._stopped = self._written = False

    def _stats(self, state: str) -> dict[str, Any]:
        return {**self.stats, "host": socket.gethostname(), "pid": os.getpid(), "state": state}

    async def _write(self, partitions: list[int] | None) -> None:
        from db.status import heartbeat

        if self._stopped:
            return
        await asyncio.to_thread(heartbeat, self.db, self.worker, datetime.now(UTC), partitions, self._stats("running"))
        self._written = True

    def stopped(self) -> None:
        """Mark the row stopped (a clean exit; blocking, never raises: a ledger gone meanwhile leaves the
        row to go stale, which the verdict reads as a dead worker)."""
        from db.status import heartbeat

        self._stopped = True
        if not self._written:  # never announced itself: nothing to mark
            return
        try:
            heartbeat(self.db, self.worker, datetime.now(UTC), None, self._stats("stopped"))
        except Exception as exc:
            log.info("could not mark worker %s stopped in the ledger (%s)", self.worker, type(exc).__name__)

    async def assigned(self, partitions: list[int]) -> None:
        """Record a partition assignment now (a rebalance); never raises."""
        log.info("assigned input partitions %s", sorted(partitions))
        try:
            await self._write(partitions)
        except Exception as exc:
            self._unsaved = partitions
            self.failures.failed("heartbeat", exc, "heartbeat write failed; retrying at the next tick")
            return
        self.failures.recovered("heartbeat")
        self._last = time.monotonic()

    async def beat(self) -> None:
        """Write the heartbeat if the last one is older than the interval; raises when the write fails
        (the caller's tick counts it), keeping an unsaved partition assignment for the next beat."""
        if time.monotonic() - self._last < INTERVAL_S:
            return
        self._last = time.monotonic()
        parts, self._unsaved = self._unsaved, None
        try:
            await self._write(parts)
        except Exception:
            self._unsaved = self._unsaved or parts
            raise
        self.failures.recovered("heartbeat")
