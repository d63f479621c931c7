"""The worker's side of a push receipt: what it made of each pushed report, and which spec it runs.

After a batch is written to the pending pool and its dead letters are sent, :meth:`Receipts.send` sends
one receipt per push id found in the batch's headers to the receipts topic (formats:
:mod:`stream.wire.receipts`): the push's report numbers the worker accepted (new, duplicate or
correction: all in the ledger) and those it dead-lettered, by reason (the validator's and the
ledger's: ``unknown-station``, ``report-id-reused``, ``window-rate`` ...). :meth:`Receipts.advertise`
tells the stations which feed and spec version this worker serves, so ``push`` refuses a file of
another spec before sending it.

Neither may stop ingestion: a receipt or an advert that cannot be sent is logged (once per interval)
and dropped. The station then sees the reports as "not confirmed" and may push them again, which is
idempotent (the ledger keeps one copy of each report, by its keyed fingerprint).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from core.columns import spec_version
from core.encoding import Schema
from stream.config.settings import Settings
from stream.wire.receipts import ADVERT_S, advert, adverts_topic, origin, receipt, receipts_topic
from stream.wire.records import dumps
from stream.worker.throttle import FailureLog

log = logging.getLogger("stream.worker.service")
SendFn = Callable[[str, bytes | None, bytes], Awaitable[Awaitable[Any]]]
Headers = Mapping[str, bytes] | Iterable[tuple[str, bytes]] | None


def verdicts(origins: list[tuple[str, int] | None], accepted_at: list[int], rejected_at: list[int],
             rejected_reasons: list[str], refused: list[tuple[int, str, str]]) -> dict[str, dict[str, Any]]:
    """Per push id: the accepted numbers and the dead-lettered ones by reason.

    ``accepted_at`` / ``rejected_at`` place each validated / rejected report in the batch
    (:class:`stream.intake.validate.Screened`); ``refused`` are the ledger's refusals, by index into
    the accepted reports (:class:`db.reports.IngestResult`)."""
    out: dict[str, dict[str, Any]] = {}

    def slot(push: str) -> dict[str, Any]:
        return out.setdefault(push, {"accepted": [], "dead": {}})

    refused_at = {accepted_at[i]: reason for i, reason, _m in refused}
    for at in accepted_at:
        o = origins[at]
        if o is None:
            continue
        if at in refused_at:
            slot(o[0])["dead"].setdefault(refused_at[at], []).append(o[1])
        else:
            slot(o[0])["accepted"].append(o[1])
    for at, reason in zip(rejected_at, rejected_reasons, strict=True):
        o = origins[at]
        if o is not None:
            slot(o[0])["dead"].setdefault(reason, []).append(o[1])
    return out


class Receipts:
    """Receipts and adverts of one feed's worker."""

    def __init__(self, settings: Settings, worker: str, schema: Schema, failures: FailureLog) -> None:
        self.settings, self.worker, self.failures = settings, worker, failures
        self.spec_name, self.spec_version = schema.spec.name, spec_version(schema.spec)
        self.topic = receipts_topic(settings.topic_reports)
        self._last_advert = float("-inf")
        self._pending: set[asyncio.Future[Any]] = set()  # sends not yet delivered (kept referenced)

    @staticmethod
    def origins(headers: list[Headers] | None, n: int) -> list[tuple[str, int] | None]:
        """Each message's ``(push id, seq)``, None when it has none (or no headers were given)."""
        return [origin(h) for h in headers] if headers is not None else [None] * n

    async def send(self, origins: list[tuple[str, int] | None], batch: Any, result: Any, send: SendFn) -> None:
        """Send the receipts of a persisted batch (``batch``: :class:`Screened`, ``result``: its
        :class:`IngestResult`); never raises."""
        if not any(o is not None for o in origins):
            return
        try:
            per_push = verdicts(origins, batch.accepted_at, batch.rejected_at,
                                [r.reason for r in batch.rejections], result.refused)
            for push, v in per_push.items():
                msg = receipt(push, self.worker, self.settings.feed, v["accepted"], v["dead"])
                await self._send(send, self.topic, push.encode(), dumps(msg), "receipt")
        except Exception as exc:
            self.failures.failed("receipt", exc, "push receipt not sent (the station sees its reports as "
                                                 "not confirmed)")

    async def advertise(self, send: SendFn, now: bool = False) -> None:
        """Send this worker's advert if the last one is older than :data:`ADVERT_S` (or ``now``); never raises."""
        if not now and time.monotonic() - self._last_advert < ADVERT_S:
            return
        self._last_advert = time.monotonic()
        s = self.settings
        msg = advert(self.worker, s.feed, s.topic_reports, self.spec_name, self.spec_version,
                     datetime.now(UTC).isoformat())
        try:
            await self._send(send, adverts_topic(s.topic_reports), self.worker.encode(), dumps(msg), "advert")
        except Exception as exc:
            self.failures.failed("advert", exc, "worker advert not sent; retrying at the next tick")

    async def _send(self, send: SendFn, topic: str, key: bytes, value: bytes, what: str) -> None:
        fut = asyncio.ensure_future(await send(topic, key, value))
        self._pending.add(fut)

        def delivered(f: asyncio.Future[Any]) -> None:
            self._pending.discard(f)
            exc = None if f.cancelled() else f.exception()
            if exc is not None:
                self.failures.failed(f"{what} delivery", exc, f"{what} not delivered")
            else:
                self.failures.recovered(f"{what} delivery")

        fut.add_done_callback(delivered)
