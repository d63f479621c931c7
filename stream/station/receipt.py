"""The station's receipt for a push: what the worker made of every report sent.

``push`` numbers the reports it sends (:mod:`stream.wire.receipts`); the worker answers on
``<topic>.receipts`` once each batch is in its ledger. :class:`ReceiptReader` starts reading that topic
before the first report is sent (so no receipt is missed), keeps up while the file is sent, then
waits until every report has a verdict: accepted (in the ledger: new, or a report it already held,
which counts once), dead-lettered (by reason) or, when the wait ends first, not ingested. The wait
ends when no new verdict has come for ``wait_s`` seconds, or when the broker has been unreachable for
:data:`BROKER_GONE_S` seconds (a broker that died mid-push: what it had acknowledged may be lost).

One byte per report in memory (5 MB for 5 million reports); the first verdict of a report counts (a
batch the worker reads again after a crash gives a second receipt, calling it accepted again).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stream.ops.kafka_clients import open_client
from stream.wire.receipts import parse_receipt, receipts_topic

BROKER_GONE_S = 10.0
UNKNOWN, ACCEPTED = 0, 1
REASON_HINTS = {
    "unknown-station": "the station is not registered: an operator adds it (`anonstream stations add ID`)",
    "report-id-reused": "the ledger holds another event under the same report id",
    "window-rate": "too many new windows for the key in the last hour: push again later",
}


@dataclass
class Verdicts:
    """The receipt's figures: of ``numbered`` reports handed to the broker."""

    numbered: int
    accepted: int = 0
    dead: dict[str, int] = field(default_factory=dict)
    why_stopped: str | None = None  # why the wait ended before every report had a verdict

    @property
    def unconfirmed(self) -> int:
        return self.numbered - self.accepted - sum(self.dead.values())


class ReceiptReader:
    """Reads the receipts of push ``push_id`` (at most ``size`` reports) from ``topic``'s receipts topic."""

    def __init__(self, bootstrap: list[str] | str, topic: str, push_id: str, size: int) -> None:
        from kafka import KafkaConsumer, TopicPartition

        self.push_id, self.bootstrap = push_id, bootstrap
        self.state = np.zeros(max(size, 0), dtype=np.uint8)  # per report number: UNKNOWN, ACCEPTED or 2 + reason
        self.reasons: list[str] = []
        self.consumer: Any = open_client(KafkaConsumer, bootstrap_servers=bootstrap, group_id=None,
                                         enable_auto_commit=False, client_id="anonstream-push-receipts",
                                         request_timeout_ms=10_000, allow_auto_create_topics=False)
        name = receipts_topic(topic)
        parts = self.consumer.partitions_for_topic(name)
        tps = [TopicPartition(name, p) for p in sorted(parts or ())]
        self.consumer.assign(tps)
        for tp, end in self.consumer.end_offsets(tps).items():  # from now on: this push's receipts only
            self.consumer.seek(tp, end)
        self.available = bool(tps)

    def _code(self, reason: str) -> int:
        if reason not in self.reasons:
            if len(self.reasons) >= 250:
                reason = "other"
                if reason in self.reasons:
                    return 2 + self.reasons.index(reason)
            self.reasons.append(reason)
        return 2 + self.reasons.index(reason)

    def _mark(self, runs: list[tuple[int, int]], code: int) -> None:
        for first, last in runs:
            part = self.state[first:last + 1]  # numbers beyond the file are ignored
            part[part == UNKNOWN] = code

    def poll(self, timeout_ms: int = 0) -> int:
        """Read the receipts that arrived; returns how many were this push's."""
        if not self.available:
            return 0
        mine = 0
        for msgs in self.consumer.poll(timeout_ms=timeout_ms, max_records=5000).values():
            for m in msgs:
                r = parse_receipt(m.value)
                if r is None or r.push != self.push_id:
                    continue
                mine += 1
                self._mark(r.accepted, ACCEPTED)
                for reason, runs in r.dead.items():
                    self._mark(runs, self._code(reason))
        return mine

    def verdicts(self, numbered: int) -> Verdicts:
        counts = np.bincount(self.state[:numbered], minlength=2 + len(self.reasons))
        return Verdicts(numbered, int(counts[ACCEPTED]),
                        {r: int(counts[2 + i]) for i, r in enumerate(self.reasons) if counts[2 + i]})

    def wait(self, numbered: int, wait_s: float, progress: Callable[[int, int], None] | None = None,
             reachable: Callable[[], bool] | None = None) -> Verdicts:
        """Poll until all ``numbered`` reports have a verdict, no verdict came for ``wait_s`` seconds, or the
        broker was unreachable (``reachable()`` false) for :data:`BROKER_GONE_S` seconds."""
        last_news, down_since, checked = time.monotonic(), None, 0.0
        v = self.verdicts(numbered)
        while v.unconfirmed > 0:
            if progress is not None:
                progress(numbered - v.unconfirmed, numbered)
            now = time.monotonic()
            if now - last_news > wait_s:
                v.why_stopped = f"no verdict from the worker for {wait_s:.0f}s"
                break
            if reachable is not None and now - checked >= 1.0:
                checked = now
                if reachable():
                    down_since = None
                elif down_since is None:
                    down_since = now
                elif now - down_since >= BROKER_GONE_S:
                    v.why_stopped = f"the broker has been unreachable for {BROKER_GONE_S:.0f}s"
                    break
            if self.poll(timeout_ms=500):
                last_news = time.monotonic()
            v = self.verdicts(numbered)
        if progress is not None and v.unconfirmed == 0:
            progress(numbered, numbered)
        return v

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.consumer.close()


def receipt_lines(v: Verdicts, acknowledged: int, valid: int) -> list[str]:
    """The receipt as printed: of the file's ``valid`` reports, how many the worker accepted, dead-lettered (by
    reason) or did not ingest (counts only). ``acknowledged``: reports the broker acknowledged, of the
    ``v.numbered`` handed to it (fewer than ``valid`` when the push ended early)."""
    not_sent = valid - v.numbered
    lines = [f"receipt: {v.accepted} of {valid} report(s) accepted by the worker (in its ledger; a report it "
             "already held counts once)"]
    dead = sum(v.dead.values())
    if dead:
        lines.append(f"receipt: {dead} dead-lettered by the worker:")
        for reason, n in sorted(v.dead.items(), key=lambda kv: (-kv[1], kv[0])):
            hint = REASON_HINTS.get(reason, "")
            lines.append(f"  {n:6d} x {reason}" + (f"  ({hint})" if hint else ""))
    unacked = min(v.numbered - acknowledged, v.unconfirmed)  # a report the broker did not acknowledge
    missing = v.unconfirmed + not_sent
    if missing:
        parts = []
        if v.unconfirmed - unacked:
            parts.append(f"{v.unconfirmed - unacked} acknowledged by the broker without a verdict from the worker "
                         f"({v.why_stopped or 'the wait ended'})")
        if unacked + not_sent:
            parts.append(f"{unacked + not_sent} not sent or not acknowledged by the broker")
        lines.append(f"receipt: {missing} report(s) not ingested: {'; '.join(parts)}")
    return lines


REPUSH = ("push the same file again with the same options once the cause is fixed: re-pushing is idempotent (the "
          "ledger keeps one copy of each report, by its keyed fingerprint: the reports it already holds count "
          "as duplicates, never twice)")
