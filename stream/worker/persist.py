"""Writing an ingested batch to the pending pool, retried while the database is down.

A batch is acknowledged to Kafka only after its reports are in the pool, so a write that fails is
retried (with a back-off up to 5 s) rather than dropped; after 60 s without a database the worker exits
(code 75) without committing its offsets, and the batch is redelivered to whichever worker comes next.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from datetime import datetime
from typing import Any

from db import PoolRepository, Rejection
from stream.worker.throttle import FailureLog

log = logging.getLogger("stream.worker.service")


async def persist(pool: PoolRepository, failures: FailureLog, accepted: list[Any], rejections: list[Rejection],
                  now: datetime) -> Any:
    """``pool.ingest_isolating(accepted, rejections, now)``, retried until it succeeds or 60 s have passed."""
    delay, deadline = 0.2, time.monotonic() + 60.0
    while True:
        try:
            result = await asyncio.to_thread(pool.ingest_isolating, accepted, rejections, now)
            failures.recovered("pending pool write")
            return result
        except Exception as exc:  # database down: retry, never let faust ack an unpersisted batch
            if time.monotonic() > deadline:
                log.critical("pending pool unwritable for 60 s (%s); exiting without committing offsets",
                             type(exc).__name__)
                os._exit(75)
            failures.failed("pending pool write", exc, "pending pool write failed; retrying")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
