"""Batch markers: how a push tells the worker where a station's batch begins and ends.

A marker is a message on the reports topic, keyed by the station id like the station's reports (so
it lands on the same partition, in order with them), whose JSON object has the field ``$batch``::

    {"$batch": "begin", "id": "b-5f0c3a9e2d1b4c7a", "station": "S1"}
    {"$batch": "end", "id": "b-5f0c3a9e2d1b4c7a", "station": "S1", "rows": 5123}

``id`` names the push (1-64 characters of ``A-Z a-z 0-9 . _ -``; one id for every station of a push),
``station`` is the station id the batch's reports carry (read in its canonical form,
:func:`core.canonical.station_id`: ``08`` is station ``8``), and ``rows`` (end marker only) how many
reports of that station the push sent before the marker. ``push`` sends a station's begin marker
before its first report (and waits until the broker has it), and its end marker after the station's
last report was acknowledged. A worker reads markers before validation: they are never reports,
never counted as reports; a message with a ``$batch`` field that is not a well-formed marker is
dead-lettered (``malformed-marker``). What the worker does with them: :mod:`db.batches`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from core.canonical import station_id

FIELD = "$batch"
_PROBE = b'"$batch"'
_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


@dataclass(frozen=True)
class Marker:
    kind: Literal["begin", "end"]
    batch: str
    station: str
    rows: int | None = None

    def encode(self) -> bytes:
        body: dict[str, Any] = {FIELD: self.kind, "id": self.batch, "station": self.station}
        if self.kind == "end":
            body["rows"] = int(self.rows or 0)
        return json.dumps(body, separators=(",", ":")).encode()


class BadMarker(ValueError):
    """A message with a ``$batch`` field that is not a well-formed marker."""


def parse_marker(raw: bytes | str | None) -> Marker | None:
    """The marker in ``raw``; None when ``raw`` is not a marker (a report, or anything else for the
    validator); :class:`BadMarker` when it has a ``$batch`` field but is not well formed."""
    if raw is None:
        return None
    data = raw.encode() if isinstance(raw, str) else raw
    if _PROBE not in data[:256]:
        return None
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return None  # not JSON at all: the validator dead-letters it as malformed-json
    if not isinstance(obj, dict) or FIELD not in obj:
        return None
    kind, batch, station, rows = obj.get(FIELD), obj.get("id"), obj.get("station"), obj.get("rows")
    if kind not in ("begin", "end"):
        raise BadMarker(f"'{FIELD}' must be begin or end")
    if not isinstance(batch, str) or not _ID.match(batch):
        raise BadMarker("'id' must be 1-64 characters of A-Z a-z 0-9 . _ -")
    if not isinstance(station, str) or not _ID.match(station):
        raise BadMarker("'station' must be 1-64 characters of A-Z a-z 0-9 . _ -")
    if kind == "end" and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
        raise BadMarker("an end marker's 'rows' must be a whole number >= 0")
    return Marker(kind, batch, station_id(station), rows if kind == "end" else None)
