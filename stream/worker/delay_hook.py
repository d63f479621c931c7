"""The worker's delay-mode hook, kept apart from :mod:`stream.worker.delay` so that a worker not in delay mode
never imports CASTLE's kernels (numba): the worker process stays light (tests/stream/worker/test_fork_preload.py)."""

from __future__ import annotations

import asyncio
from typing import Any


async def delay_tick(service: Any) -> bool:
    """The worker's hook (:meth:`stream.worker.service.WorkerService._claim_due`): in delay mode run one step of
    every key off the event loop and return True (no window is claimed); False otherwise. Its stored releases
    are published by the same tick (``publish_pending``)."""
    if not service.settings.delay.enabled:
        return False
    runner = service.__dict__.get("_delay_runner")
    if runner is None:
        from stream.worker.delay import DelayRunner  # CASTLE and its kernels load only in delay mode

        runner = service._delay_runner = DelayRunner(service.settings, service.db, service.schema, service.worker,
                                                     service._closing)
    await asyncio.to_thread(runner.tick)
    return True
