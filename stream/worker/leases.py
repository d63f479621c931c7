"""The worker's lease heartbeat: renews its window and publish claims every ``CLAIM_LEASE_S / 3``.

A claim (:mod:`db.claims`) expires only when its holder stops renewing it. The renewal runs as a task
on the worker's event loop (so a hung loop stops renewing, and the work is taken over) and writes
through its own one-thread executor (so it never waits behind ingest or publishing work).
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from db import ReleaseRepository
from stream.ops.logs import ctx
from stream.worker.throttle import FailureLog

log = logging.getLogger(__name__)


class LeaseKeeper:
    """The windows this worker is closing and the releases it is publishing, with their lease renewal."""

    def __init__(self, repo: ReleaseRepository, worker: str, lease_s: float, failures: FailureLog) -> None:
        self.repo, self.worker, self.lease_s, self.failures = repo, worker, lease_s, failures
        self.closing: set[str] = set()  # windows being closed now (until published)
        self.publishing: set[str] = set()  # releases being published now
        self._task: asyncio.Future[None] | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="lease")

    def start(self) -> None:
        """Start renewing (idempotent; on the running event loop)."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            await self.renew_once()

    async def renew_once(self) -> None:
        windows, releases = set(self.closing), set(self.publishing)
        if not windows and not releases:
            return
        loop = asyncio.get_running_loop()
        try:
            lost_w, lost_r = await loop.run_in_executor(self._pool, self.repo.renew, self.worker, windows, releases,
                                                        datetime.now(UTC), self.lease_s)
        except Exception as exc:  # the database is down: the leases run out unless it comes back in time
            self.failures.failed("lease renewal", exc, "lease renewal failed; retrying")
            return
        self.failures.recovered("lease renewal")
        for wid in lost_w:
            log.warning("window %s: claim taken over by another worker (lease expired)", wid, extra=ctx(window=wid))
        for rid in lost_r:
            log.warning("release %s: publishing claim taken over by another worker (lease expired)", rid,
                        extra=ctx(release_id=rid))

    def done(self, window_id: str) -> None:
        """The release of a window ended: its task finished, or was cancelled because the worker is stopping,
        and then the window is handed back (:meth:`hand_back`)."""
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            self.hand_back(window_id)
        self.closing.discard(window_id)

    def hand_back(self, window_id: str) -> None:
        """End this worker's claim on a window it is closing now (it is stopping), so the next worker releases
        the window at once instead of after the lease; blocking, never raises."""
        try:
            if self.repo.give_up(window_id, self.worker, datetime.now(UTC)):
                log.info("stopping: window %s handed back unreleased; the next worker releases it", window_id,
                         extra=ctx(window=window_id))
        except Exception as exc:  # the ledger is gone: the lease runs out instead
            log.info("stopping: window %s not handed back (%s); retried when its lease runs out", window_id,
                     type(exc).__name__, extra=ctx(window=window_id))

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self._pool.shutdown(wait=False)
