"""The worker's receipts: each pushed report's verdict goes to its push, and sending never fails a batch."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from stream.config.settings import Settings
from stream.io.specs import load_schema
from stream.testing.reports import spec_ref
from stream.wire.receipts import adverts_topic, new_push_id, push_headers, receipts_topic
from stream.worker.receipts import Receipts, verdicts
from stream.worker.throttle import FailureLog


def test_verdicts_follow_each_report_to_its_push() -> None:
    a, b = new_push_id(), new_push_id()
    # batch: 0 a/0 ok, 1 a/1 rejected, 2 b/0 refused by the ledger, 3 no headers ok, 4 b/1 ok, 5 a/2 ok
    origins = [(a, 0), (a, 1), (b, 0), None, (b, 1), (a, 2)]
    out = verdicts(origins, accepted_at=[0, 2, 3, 4, 5], rejected_at=[1], rejected_reasons=["invalid-value"],
                   refused=[(1, "unknown-station", "station is not registered")])
    assert out == {a: {"accepted": [0, 2], "dead": {"invalid-value": [1]}},
                   b: {"accepted": [1], "dead": {"unknown-station": [0]}}}


def _receipts(tmp_path: Path) -> Receipts:
    settings = Settings(data_dir=tmp_path, spec=spec_ref(), topic_reports="t.reports")
    return Receipts(settings, "host:1", load_schema(spec_ref()), FailureLog(logging.getLogger("test")))


def test_receipts_and_adverts_are_sent_to_the_companion_topics(tmp_path: Path) -> None:
    receipts, sent = _receipts(tmp_path), []
    pid = new_push_id()

    async def send(topic: str, key: bytes | None, value: bytes) -> asyncio.Future[None]:
        sent.append((topic, key, json.loads(value)))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    async def run() -> None:
        batch = SimpleNamespace(accepted_at=[0, 1], rejected_at=[], rejections=[])
        result = SimpleNamespace(refused=[])
        origins = Receipts.origins([dict(push_headers(pid, 0)), push_headers(pid, 1)], 2)
        await receipts.send(origins, batch, result, send)
        await receipts.send(Receipts.origins(None, 2), batch, result, send)  # no headers: no receipt
        await receipts.advertise(send)
        await receipts.advertise(send)  # within ADVERT_S: not again
        await asyncio.sleep(0)

    asyncio.run(run())
    assert [(t, k) for t, k, _v in sent] == [(receipts_topic("t.reports"), pid.encode()),
                                            (adverts_topic("t.reports"), b"host:1")]
    assert sent[0][2]["accepted"] == [[0, 1]] and sent[0][2]["dead"] == {}
    ad = sent[1][2]
    assert ad["worker"] == "host:1" and ad["spec"]["name"] == "crime-reports" and len(ad["spec"]["version"]) == 64


def test_a_receipt_that_cannot_be_sent_does_not_fail_the_batch(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    receipts = _receipts(tmp_path)

    async def broken(topic: str, key: bytes | None, value: bytes) -> asyncio.Future[None]:
        raise ConnectionError("broker gone")

    async def failing(topic: str, key: bytes | None, value: bytes) -> asyncio.Future[None]:
        fut = asyncio.get_running_loop().create_future()
        fut.set_exception(ConnectionError("not delivered"))
        return fut

    async def run() -> None:
        batch = SimpleNamespace(accepted_at=[0], rejected_at=[], rejections=[])
        origins = Receipts.origins([push_headers(new_push_id(), 0)], 1)
        await receipts.send(origins, batch, SimpleNamespace(refused=[]), broken)
        await receipts.send(origins, batch, SimpleNamespace(refused=[]), failing)
        await receipts.advertise(broken, now=True)
        await asyncio.sleep(0)

    with caplog.at_level(logging.ERROR, logger="test"):
        asyncio.run(run())
    assert "push receipt not sent" in caplog.text and "receipt not delivered" in caplog.text
    assert "worker advert not sent" in caplog.text
