"""The station's receipt for a push: what the worker made of every report sent.

``push`` numbers the reports it sends (:mod:`stream.wire.receipts`); the worker answers on
``<topic>.receipts`` once each batch is in its ledger. :class:`ReceiptReader` starts reading that topic
before the first report is sent (so no receipt is missed) and reads it in a thread of its own while
the file is sent; then push waits until every report has a verdict: accepted (in the ledger: new, or a
report it already held, which counts once), dead-lettered (by reason) or, when the wait ends first, not
ingested. The wait ends when no new verdict has come for ``wait_s`` seconds, or when the broker has been
unreachable for :data:`BROKER_GONE_S` seconds (a broker that died mid-push: what it had acknowledged
may be lost, and the receipts push had not read yet). On the worker's machine
:func:`found_in_ledger` then looks the unconfirmed reports up in the ledger.

One byte per report in memory (5 MB for 5 million reports); the first verdict of a report counts (a
batch the worker reads again after a crash gives a second receipt, calling it accepted again).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
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
    "window-rate": "too many new windows for the key in the last hour: push again later (a catch-up export of "
                   "a station's history: an operator registers it first, `anonstream stations add`)",
}


@dataclass
class Verdicts:
    """The receipt's figures: of ``numbered`` reports handed to the broker."""

    numbered: int
    accepted: int = 0
    dead: dict[str, int] = field(default_factory=dict)
    why_stopped: str | None = None  # why the wait ended before every report had a verdict
    from_ledger: int = 0  # of the accepted: found in the ledger, their receipts lost

    @property
    def unconfirmed(self) -> int:
        return self.numbered - self.accepted - sum(self.dead.values())


class ReceiptReader:
    """Reads the receipts of push ``push_id`` (at most ``size`` reports) from ``topic``'s receipts topic, in a
    thread of its own from :meth:`start` to :meth:`close` (so it keeps reading while the producer waits)."""

    def __init__(self, bootstrap: list[str] | str, topic: str, push_id: str, size: int) -> None:
        from kafka import KafkaConsumer, TopicPartition

        self.push_id = push_id
        self.state = np.zeros(max(size, 0), dtype=np.uint8)  # per report number: UNKNOWN, ACCEPTED or 2 + reason
        self.reasons: list[str] = []
        self.news = time.monotonic()  # when a receipt of this push last arrived
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.consumer: Any = open_client(KafkaConsumer, bootstrap_servers=bootstrap, group_id=None,
                                         enable_auto_commit=False, client_id="anonstream-push-receipts",
                                         request_timeout_ms=10_000, allow_auto_create_topics=False)
        try:
            name = receipts_topic(topic)
            tps = [TopicPartition(name, p) for p in sorted(self.consumer.partitions_for_topic(name) or ())]
            self.consumer.assign(tps)
            for tp, end in self.consumer.end_offsets(tps).items():  # from now on: this push's receipts only
                self.consumer.seek(tp, end)
        except BaseException:
            self.consumer.close()
            raise
        self.available = bool(tps)

    def start(self) -> ReceiptReader:
        if self.available:
            self._thread = threading.Thread(target=self._run, name="push-receipts", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.poll(timeout_ms=200):
                    self.news = time.monotonic()
            except Exception:  # the broker went away: the wait notices (reachable()); keep trying
                self._stop.wait(0.5)

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
        mine = 0
        for msgs in self.consumer.poll(timeout_ms=timeout_ms, max_records=5000).values():
            for m in msgs:
                r = parse_receipt(m.value)
                if r is None or r.push != self.push_id:
                    continue
                mine += 1
                with self._lock:
                    self._mark(r.accepted, ACCEPTED)
                    for reason, runs in r.dead.items():
                        self._mark(runs, self._code(reason))
        return mine

    def confirm(self, numbers: list[int]) -> None:
        """Mark reports accepted that the ledger was found to hold (their receipts were lost)."""
        with self._lock:
            self._mark([(n, n) for n in numbers], ACCEPTED)

    def unconfirmed(self, numbered: int) -> list[int]:
        with self._lock:
            return np.flatnonzero(self.state[:numbered] == UNKNOWN).tolist()

    def verdicts(self, numbered: int) -> Verdicts:
        with self._lock:
            counts = np.bincount(self.state[:numbered], minlength=2 + len(self.reasons))
            return Verdicts(numbered, int(counts[ACCEPTED]),
                            {r: int(counts[2 + i]) for i, r in enumerate(self.reasons) if counts[2 + i]})

    def wait(self, numbered: int, wait_s: float, progress: Callable[[int, int], None] | None = None,
             reachable: Callable[[], bool] | None = None) -> Verdicts:
        """Until all ``numbered`` reports have a verdict, no verdict came for ``wait_s`` seconds, or the broker
        was unreachable (``reachable()`` false) for :data:`BROKER_GONE_S` seconds."""
        started, down_since = time.monotonic(), None
        v = self.verdicts(numbered)
        while v.unconfirmed > 0 and self._thread is not None:
            if progress is not None:
                progress(numbered - v.unconfirmed, numbered)
            now = time.monotonic()
            if now - max(self.news, started) > wait_s:
                v.why_stopped = f"no verdict from the worker for {wait_s:.0f}s"
                break
            if reachable is not None:
                if reachable():
                    down_since = None
                elif down_since is None:
                    down_since = now
                elif now - down_since >= BROKER_GONE_S:
                    v.why_stopped = f"the broker has been unreachable for {BROKER_GONE_S:.0f}s"
                    break
            self._stop.wait(0.5)
            v = self.verdicts(numbered)
        if v.unconfirmed and self._thread is None:
            v.why_stopped = "the broker has no receipts topic for it"
        if progress is not None and v.unconfirmed == 0:
            progress(numbered, numbered)
        return v

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        with contextlib.suppress(Exception):
            self.consumer.close()


def found_in_ledger(ledger: Any, path: str, schema: Any, station: str | None, lines: Sequence[int],
                    numbers: list[int], chunk: int = 5000) -> list[int]:
    """Those of the unconfirmed report ``numbers`` that the ledger holds exactly as sent (same keyed
    fingerprint and content hash): the worker took them in but their receipts were lost, e.g. with a broker
    that died before push read them. Needs the ledger and its key, as :class:`LedgerPreview` has them
    (the worker's machine); reads the file once more, in bounded memory (``lines``: each number's line)."""
    from stream.intake.validate import Clean, ReportValidator, to_incoming
    from stream.io.rows import rows_for_spec
    from stream.station.producer import as_sent

    wanted = np.zeros(len(lines), dtype=bool)
    wanted[numbers] = True
    validator = ReportValidator(schema)
    found: list[int] = []
    batch: dict[str, tuple[str, int]] = {}  # fingerprint -> (content hash, number)
    k = 0
    for line, raw in rows_for_spec(path, schema.spec.input):
        while k < len(lines) and lines[k] < line:
            k += 1
        if k == len(lines):
            break
        if lines[k] != line or not wanted[k]:
            continue
        clean = validator.check(as_sent(raw, validator.station_col, station))
        if isinstance(clean, Clean):
            r = to_incoming(clean, ledger.key, ledger.settings.window_key_for(clean.station_id), False)
            batch[r.fingerprint] = (r.content_hash, k)
        if len(batch) >= chunk:
            found += _held(ledger, batch)
            batch = {}
    return found + _held(ledger, batch) if batch else found


def _held(ledger: Any, batch: dict[str, tuple[str, int]]) -> list[int]:
    from sqlalchemy import select

    from db.models import PendingReport

    with ledger.db.read() as s:
        rows = s.execute(select(PendingReport.fingerprint, PendingReport.content_hash)
                         .where(PendingReport.fingerprint.in_(sorted(batch)))).tuples().all()
    return [batch[fp][1] for fp, h in rows if batch[fp][0] == h]


def receipt_lines(v: Verdicts, acknowledged: int, valid: int) -> list[str]:
    """The receipt as printed: of the file's ``valid`` reports, how many the worker accepted, dead-lettered (by
    reason) or did not ingest (counts only). ``acknowledged``: reports the broker acknowledged, of the
    ``v.numbered`` handed to it (fewer than ``valid`` when the push ended early)."""
    not_sent = valid - v.numbered
    lines = [f"receipt: {v.accepted} of {valid} report(s) accepted by the worker (in its ledger; a report it "
             "already held counts once)"]
    if v.from_ledger:
        lines.append(f"receipt: {v.from_ledger} of them found in the ledger (their receipts were lost)")
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
