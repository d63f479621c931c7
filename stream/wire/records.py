"""Record schemas of the four topics and the release checksum.

Topics (names configurable in :class:`stream.config.settings.Settings`):

* ``crime.reports``: one JSON report per message, keyed by station id. Example::

    {"report_id": "S1-000042", "station_id": "S1", "event_time": "2024-03-01T10:15:00Z",
     "name": "Jane Roe", "dob": "1990-04-02", "age": 34, "sex": "F", "suburb": "Carlton",
     "postcode": "3053", "reporter": "victim", "offence": "Theft"}

* ``crime.reports.dlq``: :class:`stream.intake.dead_letters.DeadLetter` (one-line reason, station, time, and
  the original payload: at most 16,384 characters of it, with its size in bytes and a SHA-256 of the whole
  message).
* ``crime.anonymized``: one :class:`stream.wire.contracts.RecordMessage` per released record, keyed by release id; no
  identifiers, no report ids, no fingerprints. ``values`` holds the published table's columns
  (:func:`core.columns.typed_columns`): each QI label with its typed columns (``age_lo``, ``age_hi``,
  ``suburb_level``, ``suburb_region`` ...), the sensitive value, ``suppressed``, the event dates
  (``event_date_lo``, ``event_date_hi``: :mod:`core.columns.dates`) and the window key (``station_id``);
  docs/stream.md "Release columns" explains each.
* ``crime.releases``: one :class:`stream.wire.contracts.Manifest` per release, keyed by release id, sent
  after its records.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from core.columns.dates import EVENT_DATES
from stream.wire.contracts import Manifest, RecordMessage

AnonymizedRecord = RecordMessage  # the record message's contract (stream.wire.contracts); older name
__all__ = ["AnonymizedRecord", "Manifest", "RecordMessage"]


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, default=jsonable).encode()


def jsonable(obj: Any) -> Any:
    """numpy scalars / arrays and other odd values to JSON-able Python values."""
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    return str(obj)


def clean_json(obj: Any) -> Any:
    """A deep copy that survives a JSON round trip (NaN/inf become None)."""
    def walk(v: Any) -> Any:
        if isinstance(v, float):
            return v if math.isfinite(v) else None
        if isinstance(v, dict):
            return {str(k): walk(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [walk(x) for x in v]
        return v

    text = json.dumps(obj, default=jsonable)
    if "NaN" not in text and "Infinity" not in text:  # nothing to replace: skip the walk (10k-row releases)
        return json.loads(text)
    return walk(json.loads(text))


def record_messages(release_id: str, columns: list[str], rows: list[list[Any]]) -> list[dict[str, Any]]:
    """The ``crime.anonymized`` messages of a release, in order (``seq`` numbers them from 0)."""
    out = []
    for seq, row in enumerate(rows):
        values = dict(zip(columns, row, strict=True))
        class_id = values.pop("class_id")
        out.append({"release_id": release_id, "seq": seq, "class_id": class_id, "values": values})
    return out


def context_columns(publish: tuple[str, ...], window_by: str) -> list[str]:
    """Context published as record columns: the event dates ``event_date_lo`` / ``event_date_hi`` (the
    spec's ``publish_context`` says ``event_date``), and the window key as ``station_id`` (windows per
    station) or ``region`` (per region); nothing for the key of global windows."""
    out = list(EVENT_DATES) if "event_date" in publish else []
    if "station_id" in publish and window_by in ("station", "region"):
        out.append("station_id" if window_by == "station" else "region")
    return out


def context_values(names: list[str], window: Any, dates: tuple[Any, Any] | None = None) -> dict[str, Any]:
    """The context columns' values for the records of a release of ``window``: the key, one value for
    every record; ``dates``, the rows' ``(event_date_lo, event_date_hi)`` as
    :func:`core.columns.event_date_spans` gives them (one value per row: never the window's day, which
    is not the date of carried, merged or backfilled reports)."""
    values: dict[str, Any] = {"station_id": window.key.removeprefix("station:"),
                              "region": window.key.removeprefix("region:")}
    if dates is not None:
        values.update(zip(EVENT_DATES, dates, strict=True))
    missing = [n for n in names if n not in values]
    if missing:
        raise ValueError(f"no values for context column(s) {missing}")
    return {n: values[n] for n in names}


def checksum(messages: list[dict[str, Any]]) -> str:
    """SHA-256 over the canonical JSON of the release's record messages in ``seq`` order."""
    return checksum_encoded([dumps(m) for m in sorted(messages, key=lambda m: m["seq"])])


def checksum_encoded(encoded: list[bytes]) -> str:
    """:func:`checksum` of messages already encoded with :func:`dumps`, in ``seq`` order."""
    h = hashlib.sha256()
    for m in encoded:
        h.update(m)
        h.update(b"\n")
    return h.hexdigest()
