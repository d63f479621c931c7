"""Push receipts and worker adverts: how a station learns what the worker made of its push.

Every report ``push`` sends carries two message headers (:func:`push_headers`, the one place they are
made): ``anonstream-push``, the push id (32 hex digits, new for every ``push`` run), and
``anonstream-seq``, the report's number within the push (0, 1, 2 ...). A message without them (sent
by another producer) gets no receipt.

Two companion topics of a reports topic ``T``, created with it (:func:`stream.ops.broker.topic_partitions`):

* ``T.receipts``: once a batch is in the pending pool and its dead letters are sent, the worker sends one
  :func:`receipt` per push id in the batch: which of the push's numbers it accepted (now in the ledger:
  new, a duplicate of a report it holds, or a correction) and which it dead-lettered, with the reason,
  as runs of numbers. Delivery is at least once: a batch read again after a crash gives a second
  receipt for the same numbers, and the first verdict counts.
* ``T.workers``: each worker serving ``T`` sends an :func:`advert` (its feed, and the name and version
  of its spec: the SHA-256 of the spec's canonical content, :func:`core.columns.spec_version`) when its
  partitions are assigned and every :data:`ADVERT_S` seconds, keyed by worker id (a compacted topic).

Neither carries a report id, a value or a fingerprint: numbers, counts and reasons only.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from stream.wire.contracts import PushReceipt

PUSH_HEADER = "anonstream-push"
SEQ_HEADER = "anonstream-seq"
ADVERT_S = 10.0  # a worker advertises this often
ADVERT_TTL_S = 60.0  # an advert older than this (by the pushing machine's clock) is a worker gone
_PUSH_ID = re.compile(r"[0-9a-f]{32}")
MAX_SEQ = 2**40


def receipts_topic(reports_topic: str) -> str:
    return f"{reports_topic}.receipts"


def adverts_topic(reports_topic: str) -> str:
    return f"{reports_topic}.workers"


def topic_config(topic: str) -> dict[str, str]:
    """Broker settings of a topic created by ``run``: adverts compacted (the latest per worker), receipts
    kept for a day; none for other topics."""
    if topic.endswith(".workers"):
        return {"cleanup.policy": "compact"}
    return {"retention.ms": str(24 * 3600 * 1000)} if topic.endswith(".receipts") else {}


def new_push_id() -> str:
    return uuid.uuid4().hex


def push_headers(push_id: str, seq: int) -> list[tuple[str, bytes]]:
    """The headers of report number ``seq`` of push ``push_id``."""
    return [(PUSH_HEADER, push_id.encode()), (SEQ_HEADER, str(seq).encode())]


def origin(headers: Mapping[str, bytes] | Iterable[tuple[str, bytes]] | None) -> tuple[str, int] | None:
    """``(push id, seq)`` from a message's headers (a mapping or a list of pairs), None without valid ones."""
    if not headers:
        return None
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    found: dict[str, Any] = {}
    try:
        for name, value in pairs:
            if name in (PUSH_HEADER, SEQ_HEADER):
                found[name] = bytes(value).decode("ascii")
        push, seq = found[PUSH_HEADER], int(found[SEQ_HEADER])
    except (KeyError, ValueError, TypeError, UnicodeDecodeError):
        return None
    return (push, seq) if _PUSH_ID.fullmatch(push) and 0 <= seq < MAX_SEQ else None


def to_runs(numbers: Iterable[int]) -> list[list[int]]:
    """Sorted numbers as inclusive runs: ``[0, 1, 2, 5]`` -> ``[[0, 2], [5, 5]]``."""
    runs: list[list[int]] = []
    for n in sorted(set(numbers)):
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return runs


def from_runs(runs: Any) -> Iterator[tuple[int, int]]:
    """The valid ``(first, last)`` runs of a decoded receipt (anything malformed is skipped)."""
    if not isinstance(runs, list):
        return
    for run in runs:
        if (isinstance(run, list) and len(run) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                            for x in run) and 0 <= run[0] <= run[1] < MAX_SEQ):
            yield run[0], run[1]


def receipt(push: str, worker: str, feed: str, accepted: Iterable[int],
            dead: Mapping[str, Iterable[int]]) -> dict[str, Any]:
    """One receipt: the numbers of push ``push`` a batch accepted, and those it dead-lettered by reason
    (checked against its contract, :class:`stream.wire.contracts.PushReceipt`)."""
    return PushReceipt(push=push, worker=worker, feed=feed, accepted=[(a, b) for a, b in to_runs(accepted)],
                       dead={reason: [(a, b) for a, b in to_runs(seqs)] for reason, seqs in dead.items()}
                       ).model_dump(mode="json")


@dataclass
class Receipt:
    push: str
    worker: str
    accepted: list[tuple[int, int]] = field(default_factory=list)
    dead: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


def parse_receipt(raw: bytes | None) -> Receipt | None:
    """A receipt message decoded, or None if it is not one."""
    try:
        obj = json.loads(raw or b"")
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("push"), str):
        return None
    dead: dict[str, Any] = obj["dead"] if isinstance(obj.get("dead"), dict) else {}
    return Receipt(obj["push"], str(obj.get("worker", "")), list(from_runs(obj.get("accepted"))),
                   {str(reason)[:64]: list(from_runs(runs)) for reason, runs in dead.items()})


def advert(worker: str, feed: str, topic: str, spec_name: str, spec_version: str, at: str) -> dict[str, Any]:
    """What a worker tells the stations pushing to ``topic``."""
    return {"worker": worker, "feed": feed, "topic": topic, "spec": {"name": spec_name, "version": spec_version},
            "at": at, "every_s": ADVERT_S}
