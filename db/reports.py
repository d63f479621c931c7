"""What the ledger takes in and gives back at ingest: an accepted report, a rejection, a batch's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class IncomingReport:
    """An accepted report without direct identifiers."""

    fingerprint: str
    person_fp: str | None
    content_hash: str
    station_id: str
    window_key: str
    event_time: datetime
    data: dict[str, Any]
    content_fp: str | None = None  # keyed fingerprint of the content (survives re-keying)


@dataclass(frozen=True)
class Rejection:
    station_id: str
    reason: str
    message: str
    window_key: str | None = None  # set for ``missing-value`` drops: tallied on the key's window (manifest)


@dataclass
class IngestResult:
    accepted: int = 0
    duplicates: int = 0
    corrections: int = 0  # of which ``replaced`` replaced a pending report (db.corrections)
    replaced: int = 0
    rejected: int = 0
    windows: set[str] = field(default_factory=set)
    refused: list[tuple[int, str, str]] = field(default_factory=list)  # (index in the batch, reason, message)
    may_be_due: bool = False  # a window filled up or one was opened: look for due windows now (WindowRouter)
