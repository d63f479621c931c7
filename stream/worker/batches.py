"""Batch markers in a worker's input (:mod:`stream.wire.markers`): taken out of each ingested batch of
messages before validation and recorded in the ledger (:mod:`db.batches`).

Begin markers are recorded before the batch's reports are written to the pending pool, so no tick
between the two can close a window of that station by the watermark; end markers after them, so a
batch counts as complete only once every report before its end marker is in the pool (or
dead-lettered). Markers are never reports: not validated, not counted as reports. A message with a
``$batch`` field that is not a well-formed marker is dead-lettered (``malformed-marker``), never dropped.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from db import Database
from db.batches import BatchMark, begin, end
from db.reports import Rejection
from stream.intake.dead_letters import dead_letter
from stream.intake.guards import valid_station_id
from stream.wire.markers import BadMarker, parse_marker

log = logging.getLogger(__name__)
MALFORMED = "malformed-marker"


class Split(NamedTuple):
    """A batch of messages split: its reports (in order), begin and end markers, malformed markers."""

    reports: list[bytes | None]
    begins: list[BatchMark]
    ends: list[BatchMark]
    malformed: list[tuple[bytes | str, str]]  # (message, why it is not a marker)


class Malformed(NamedTuple):
    """A batch's malformed markers: their dead letters, and the same as rejections for the ledger's counts."""

    dead: list[dict[str, Any]]
    rejections: list[Rejection]


def _station_of(raw: bytes | str) -> str | None:
    """The station id a malformed marker names, when it names a valid one (for its dead letter's key)."""
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return valid_station_id(obj.get("station")) if isinstance(obj, dict) else None


class MarkerIntake:
    """One feed's markers: ``window_key_for`` maps a station to its window key (the feed's settings)."""

    def __init__(self, db: Database, feed: str, window_key_for: Callable[[str], str]) -> None:
        self.db, self.feed, self.key_for = db, feed, window_key_for

    def split(self, values: list[bytes | None]) -> Split:
        """The reports (every message that is not a marker, in order), the begin and the end markers, and the
        malformed markers (a ``$batch`` field, not a well-formed marker: for the dead-letter topic)."""
        out = Split([], [], [], [])
        for raw in values:
            try:
                marker = parse_marker(raw)
            except BadMarker as exc:
                assert raw is not None  # parse_marker reads None as "not a marker"
                log.warning("dead-lettered a malformed batch marker: %s", exc)
                out.malformed.append((raw, str(exc)))
                continue
            if marker is None:
                out.reports.append(raw)
                continue
            mark = BatchMark(marker.station, marker.batch, self.key_for(marker.station), marker.rows)
            (out.begins if marker.kind == "begin" else out.ends).append(mark)
        return out

    @staticmethod
    def report_headers(values: list[bytes | None], headers: list[Any] | None) -> list[Any] | None:
        """``headers`` of the messages :meth:`split` keeps as reports (aligned with its reports)."""
        if headers is None:
            return None
        kept = []
        for raw, h in zip(values, headers, strict=True):
            try:
                if parse_marker(raw) is None:
                    kept.append(h)
            except BadMarker:
                pass
        return kept

    async def before(self, values: list[bytes | None], now: datetime,
                     ) -> tuple[list[bytes | None], list[BatchMark], Malformed]:
        """Record the begin markers of ``values``; returns its reports, its end markers (for :meth:`after`)
        and its malformed markers, as dead letters and as the ledger's rejections."""
        split = self.split(values)
        if split.begins:
            await asyncio.to_thread(begin, self.db, self.feed, split.begins, now)
        bad = Malformed([], [])
        for raw, why in split.malformed:
            station, message = _station_of(raw), f"malformed batch marker: {why}"
            bad.dead.append(dead_letter(raw, MALFORMED, message, station, now))
            bad.rejections.append(Rejection(station or "unknown", MALFORMED, message))
        return split.reports, split.ends, bad

    async def after(self, ends: list[BatchMark], now: datetime) -> bool:
        """Record end markers once the reports before them are written; True if there were any."""
        if not ends:
            return False
        await asyncio.to_thread(end, self.db, self.feed, ends, now)
        log.info("batch complete for %d station(s) (%s): %d row(s) sent", len(ends),
                 ", ".join(sorted({m.batch for m in ends})), sum(m.rows or 0 for m in ends))
        return True


def segments(values: list[bytes | None], headers: list[Any] | None,
             ) -> Iterator[tuple[list[bytes | None], list[Any] | None]]:
    """``values`` (and their ``headers``) cut after each end marker: a consumer batch that holds the end of
    one push and rows after it (a backlog: both pushes of a station in one fetch) is ingested in parts, each
    at a later time (:func:`later`), so the ledger tells the windows of the later push from those of the
    earlier one (:func:`db.batches.merge_completed` merges each push's windows on its own)."""
    start = 0
    for i, raw in enumerate(values):
        try:
            marker = parse_marker(raw)
        except BadMarker:
            continue
        if marker is not None and marker.kind == "end" and i + 1 < len(values):
            yield values[start:i + 1], None if headers is None else headers[start:i + 1]
            start = i + 1
    yield values[start:], None if headers is None else headers[start:]


def later(now: datetime, previous: datetime | None) -> datetime:
    """``now``, or a microsecond after ``previous`` if the clock has not moved past it (segments' times
    must be strictly increasing, and a clock's resolution is coarser than a segment's work)."""
    return now if previous is None or now > previous else previous + timedelta(microseconds=1)
